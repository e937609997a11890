/**
 * Ties an editor, the service client and the hints panel together.
 *
 * After the user stops typing for `debounceMs`, the text is read again; citations whose key
 * (source + claim sentence) has no result yet are sent in one request, at most `maxClaims`
 * at a time, one request at a time. Results are kept by key for the whole edit session, so
 * moving text around or editing other paragraphs sends nothing. After a failure the panel
 * shows one calm message and the gadget waits (`pauseMs`, or for good when the wiki's
 * Content-Security-Policy blocks the service) before it tries again.
 */
'use strict';

var refs = require( './side-refs.js' );
var insertion = require( './side-insert.js' );

/* The service's input limits (gadget/server/validation.py): a claim over them would make
   it refuse the whole request. */
var LIMITS = { text: 2000, context: 5000, title: 500, sections: 10, heading: 255 };
/* eslint-disable no-control-regex -- these patterns exist to find control characters */
var HTTP_URL = /^https?:\/\/[^\s/?#@:[\]\\\u0000-\u001f\u007f]+(:[0-9]{1,5})?([/?#][^\s\u0000-\u001f\u007f]*)?$/;
var CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|([^\ud800-\udbff]|^)[\udc00-\udfff]/g;
/* eslint-enable no-control-regex */

function clean( text, limit, keepEnd ) {
	text = String( text || '' ).replace( CONTROL, '$1' ).trim();
	if ( text.length <= limit ) {
		return text;
	}
	return keepEnd ? text.slice( text.length - limit ).trim() : text.slice( 0, limit ).trim();
}

/**
 * The claim the service accepts for a citation use, or null when it has nothing to check
 * (no sentence, no http(s) URL).
 *
 * @param {Object} use From side-refs.js
 * @return {Object|null}
 */
function claimFor( use ) {
	var url = String( use.url || '' ).trim().replace( /^\/\//, 'https://' ),
		text = clean( use.text, LIMITS.text, true );
	if ( !text || url.length > 2000 || !HTTP_URL.test( url ) ) {
		return null;
	}
	/* eslint-disable camelcase -- field names of docs/service.md */
	return { key: use.key, text: text, left_context: clean( use.leftContext, LIMITS.context, true ),
		section: use.section.slice( 0, LIMITS.sections ).map( function ( heading ) {
			return clean( heading, LIMITS.heading, false );
		} ),
		url: url, citation_title: clean( use.title, LIMITS.title, false ) };
	/* eslint-enable camelcase */
}

var PAUSE_AFTER = { 'rate-limited': 60000, unreachable: 30000, timeout: 30000, server: 30000, failed: 30000, csp: Infinity };

/**
 * @param {Object} o
 * @param {Object} o.editor See side-editors.js
 * @param {Object} o.client See side-api.js
 * @param {Object} o.consent See side-consent.js
 * @param {Object} o.panel See side-hints.js
 * @param {Object} o.page wiki, title, revision
 * @param {Object} o.config debounceMs, maxClaims, dashboardUrl
 * @param {Function} o.msg Message text
 * @param {Function} [o.setTimeout]
 * @param {Function} [o.clearTimeout]
 * @param {Function} [o.now]
 * @return {Object} start(), run(), insert( key, suggestion ), show( key )
 */
function createController( o ) {
	var wait = o.setTimeout || setTimeout, cancel = o.clearTimeout || clearTimeout,
		now = o.now || Date.now,
		results = {}, sent = {}, failed = {}, inserted = {},
		timer = null, busy = false, again = false, pausedUntil = 0, uses = [];

	function checkable( all ) {
		var seen = {};
		return all.filter( function ( use ) {
			var fresh = !seen[ use.key ] && claimFor( use );
			seen[ use.key ] = true;
			return fresh;
		} );
	}

	/* Read the citations again from the text, and show them. */
	function refresh() {
		uses = checkable( refs.findRefs( o.editor.getText() ) );
		render();
	}

	function render() {
		o.panel.render( uses.map( function ( use, index ) {
			return { key: use.key, number: index + 1, text: use.text, result: results[ use.key ] || null,
				pending: !!sent[ use.key ], inserted: inserted[ use.key ] };
		} ) );
		updateStatus();
	}

	function updateStatus() {
		var waiting = uses.filter( function ( use ) {
			return sent[ use.key ];
		} ).length;
		if ( waiting ) {
			o.panel.setStatus( o.msg( 'side-status-checking', waiting ) );
		} else if ( uses.length ) {
			o.panel.setStatus( o.msg( 'side-status-done', uses.length ) );
		} else {
			o.panel.setStatus( o.msg( 'side-status-idle' ) );
		}
	}

	function payload( batch ) {
		var body = { wiki: o.page.wiki, title: o.page.title, claims: batch.map( claimFor ) };
		if ( o.page.revision ) {
			body.revision = o.page.revision;
		}
		return body;
	}

	/*
	 * The article's page on the dashboard: the editor asks about the article, and that page
	 * stays current as later revisions are checked. A service without page_url (older than
	 * the article page) gets the check's own page.
	 */
	function dashboardFor( check ) {
		if ( o.config.dashboardUrl ) {
			return o.config.dashboardUrl.replace( '$1', encodeURIComponent( o.page.wiki ) )
				.replace( '$2', encodeURIComponent( o.page.title.replace( / /g, '_' ) ) );
		}
		return check && ( check.page_url || check.dashboard_url );
	}

	function finish( batch, check ) {
		( check.results || [] ).forEach( function ( result ) {
			results[ result.client_key ] = result;
		} );
		batch.forEach( function ( use ) {
			failed[ use.key ] = !results[ use.key ];
		} );
		o.panel.clearError();
		o.panel.setDashboard( dashboardFor( check ) );
	}

	function fail( batch, error ) {
		o.panel.setError( error.code, error.detail );
		pausedUntil = now() + ( PAUSE_AFTER[ error.code ] || 0 );
		if ( error.code === 'rejected' ) {
			// The same claims would be refused again: keep them out of later requests.
			batch.forEach( function ( use ) {
				failed[ use.key ] = true;
			} );
		}
	}

	/* Read the text, show it, and send what has no result yet (if allowed). */
	function run() {
		var batch;
		timer = null;
		if ( o.consent.state() !== 'granted' ) {
			return;
		}
		refresh();
		if ( busy ) {
			again = true;
			return;
		}
		batch = uses.filter( function ( use ) {
			return !results[ use.key ] && !failed[ use.key ];
		} ).slice( 0, o.config.maxClaims || 50 );
		if ( !batch.length || now() < pausedUntil ) {
			return;
		}
		busy = true;
		batch.forEach( function ( use ) {
			sent[ use.key ] = true;
		} );
		render();
		o.client.submit( payload( batch ) ).then( function ( check ) {
			finish( batch, check );
			settle( batch );
		}, function ( error ) {
			fail( batch, error );
			settle( batch );
		} );
	}

	/* A request ended: show the results and go on with what is still unchecked. */
	function settle( batch ) {
		busy = false;
		batch.forEach( function ( use ) {
			delete sent[ use.key ];
		} );
		refresh();
		if ( now() >= pausedUntil && ( again || uses.some( function ( use ) {
			return !results[ use.key ] && !failed[ use.key ];
		} ) ) ) {
			schedule( 0 );
		}
		again = false;
	}

	function schedule( delay ) {
		if ( timer !== null ) {
			cancel( timer );
		}
		timer = wait( run, delay === undefined ? o.config.debounceMs : delay );
	}

	function consentGiven( granted ) {
		o.consent.set( granted ? 'granted' : 'declined' );
		if ( granted ) {
			run();
		} else {
			o.panel.showOff();
		}
	}

	function insert( key, suggestion ) {
		var plan = insertion.planInsertion( o.editor.getText(), key, suggestion );
		if ( plan.error ) {
			// Messages: side-insert-missing, side-insert-duplicate
			o.panel.notify( 'side-insert-' + plan.error );
			return;
		}
		if ( o.editor.insertEdits ) { // visual mode: the model applies the plan as a whole
			o.editor.insertEdits( plan.edits || [ plan ] );
		} else {
			( plan.edits || [ plan ] ).forEach( function ( edit ) { // the last in the text first
				o.editor.insert( edit.offset, edit.text );
			} );
		}
		inserted[ key ] = inserted[ key ] || {};
		inserted[ key ][ suggestion.url ] = true;
		refresh();
		schedule();
	}

	function show( key ) {
		var i, all = refs.findRefs( o.editor.getText() );
		for ( i = 0; i < all.length; i++ ) {
			if ( all[ i ].key === key ) {
				o.editor.select( all[ i ].start, all[ i ].end );
				return;
			}
		}
	}

	function start() {
		o.editor.onChange( function () {
			schedule();
		} );
		if ( o.consent.state() === 'granted' ) {
			run();
		} else if ( o.consent.state() === 'declined' ) {
			o.panel.showOff();
		} else {
			o.panel.showConsent( o.client.origin );
		}
	}

	return { start: start, run: run, insert: insert, show: show, consentGiven: consentGiven };
}

module.exports = {
	createController: createController,
	claimFor: claimFor
};
