/**
 * The hints panel under the editor: one row per citation with its verdict level, the evidence
 * sentence, and for weak citations the better sources with an "Insert citation" button.
 *
 * The level is the service's (the API's ``level``), one of four, each with its own style:
 * supported, partially supported (with the claim's words the source does not back), not
 * supported, and could not be checked (a paywall, a wall, a fetch error, a language the model
 * cannot read...), which says so calmly with the service's reason, in grey, never as a
 * warning. A flag (``flagged``: likely fails review) is shown prominently; a level Side is
 * unsure of (``unsure``: its score between the sure flag cut and the supported cut) is worded
 * as its guess ("Probably partially supported; Side is unsure") in a quiet grey style, never as
 * a flag. Plain DOM with Codex classes (cdx-message, cdx-button), so it looks native in
 * Vector 2022 without loading Vue; side.css adds the few layout rules.
 *
 * The panel never calls the service or edits text: it reports clicks to the controller.
 */
'use strict';

/* The label of each level, and of the two states before there is one. */
var LEVEL_MESSAGES = {
	supported: 'side-verdict-supported',
	// eslint-disable-next-line camelcase -- the API's level value
	partially_supported: 'side-verdict-partially-supported',
	// eslint-disable-next-line camelcase -- the API's level value
	not_supported: 'side-verdict-not-supported',
	// eslint-disable-next-line camelcase -- the API's level value
	cannot_check: 'side-verdict-cannot-check',
	pending: 'side-verdict-pending',
	none: 'side-verdict-none'
};
/* Codex button classes: 0.x (MediaWiki 1.39) used --type-*, later releases use --weight-*. */
var BUTTON_CLASSES = {
	primary: 'cdx-button--action-progressive cdx-button--type-primary cdx-button--weight-primary',
	normal: 'cdx-button--framed',
	quiet: 'cdx-button--type-quiet cdx-button--weight-quiet'
};
/* The label of a level Side is unsure of: its guess (only a level that needs review is ever unsure). */
var UNSURE_MESSAGES = {
	// eslint-disable-next-line camelcase -- the API's level value
	partially_supported: 'side-verdict-unsure-partially-supported',
	// eslint-disable-next-line camelcase -- the API's level value
	not_supported: 'side-verdict-unsure-not-supported'
};
/* What a weak citation's source does not back, after its severity ("high: a date is not backed"). */
var MISSING_MESSAGES = {
	number: 'side-missing-number',
	date: 'side-missing-date',
	name: 'side-missing-name',
	quotation: 'side-missing-quotation',
	wording: 'side-missing-wording'
};
var SEVERITY_MESSAGES = { high: 'side-severity-high', low: 'side-severity-low' };
var ERROR_MESSAGES = {
	unreachable: 'side-error-unreachable',
	csp: 'side-error-csp',
	timeout: 'side-error-timeout',
	'rate-limited': 'side-error-rate-limited',
	rejected: 'side-error-rejected',
	server: 'side-error-server',
	failed: 'side-error-failed'
};

/*
 * Whether ``url`` may become a link: only an absolute http(s) URL. The service's URLs come from
 * cited pages and the evidence index, which anyone can write to; a ``javascript:`` or ``data:``
 * URL in an ``href`` would run in the wiki's origin when clicked. The scheme is read from the
 * string's very start (no leading space, which a browser would strip), so nothing a browser
 * reads as another scheme passes.
 */
function isWebUrl( url ) {
	return typeof url === 'string' && /^https?:\/\/[^/\\\s]/i.test( url );
}

/* The evidence sentence with the highest score (the list may be in source order). */
function strongest( evidence ) {
	var best = null;
	( evidence || [] ).forEach( function ( sentence ) {
		if ( sentence && sentence.text && ( !best || ( sentence.score || 0 ) > ( best.score || 0 ) ) ) {
			best = sentence;
		}
	} );
	return best && best.text;
}

/**
 * @param {Object} options
 * @param {Document} options.document
 * @param {Function} options.msg ( key, ...params ) -> plain text
 * @param {Function} options.onConsent ( granted: boolean )
 * @param {Function} options.onInsert ( key, suggestion )
 * @param {Function} options.onShow ( key ) Select the citation in the text
 * @return {Object} The panel
 */
function createPanel( options ) {
	var doc = options.document, msg = options.msg,
		root = el( 'div', 'side-panel', null, { role: 'region', 'aria-label': msg( 'side-title' ) } ),
		header = el( 'div', 'side-panel__header' ),
		status = el( 'span', 'side-panel__status', '', { 'aria-live': 'polite' } ),
		dashboard = el( 'a', 'side-panel__dashboard', msg( 'side-dashboard' ), { target: '_blank', rel: 'noopener' } ),
		notice = el( 'div', 'side-panel__notice' ),
		list = el( 'ol', 'side-panel__list' );

	function el( tag, className, text, attributes ) {
		var node = doc.createElement( tag );
		if ( className ) {
			node.className = className;
		}
		if ( text !== null && text !== undefined ) {
			node.textContent = text;
		}
		Object.keys( attributes || {} ).forEach( function ( name ) {
			node.setAttribute( name, attributes[ name ] );
		} );
		return node;
	}

	function button( text, className, weight, onClick ) {
		var node = el( 'button', 'cdx-button ' + BUTTON_CLASSES[ weight ] + ' ' + className, text, { type: 'button' } );
		node.addEventListener( 'click', onClick );
		return node;
	}

	function message( type, text, extra ) {
		var box = el( 'div', 'cdx-message cdx-message--block cdx-message--' + type, null,
				{ role: type === 'error' || type === 'warning' ? 'alert' : 'status' } ),
			content = el( 'div', 'cdx-message__content' );
		content.appendChild( el( 'p', null, text ) );
		( extra || [] ).forEach( function ( node ) {
			content.appendChild( node );
		} );
		box.appendChild( el( 'span', 'cdx-message__icon' ) );
		box.appendChild( content );
		return box;
	}

	function setNotice( node ) {
		notice.textContent = '';
		if ( node ) {
			notice.appendChild( node );
		}
	}

	header.appendChild( el( 'strong', 'side-panel__title', msg( 'side-title' ) ) );
	header.appendChild( status );
	header.appendChild( dashboard );
	dashboard.hidden = true;
	root.appendChild( header );
	root.appendChild( notice );
	root.appendChild( list );

	function showConsent( origin ) {
		list.textContent = '';
		setStatus( '' );
		setNotice( message( 'notice', msg( 'side-consent-text', origin ), [
			button( msg( 'side-consent-allow' ), 'side-consent-allow', 'primary', function () {
				setNotice( null );
				options.onConsent( true );
			} ),
			button( msg( 'side-consent-decline' ), 'side-consent-decline', 'normal', function () {
				options.onConsent( false );
			} )
		] ) );
	}

	function showOff() {
		list.textContent = '';
		setStatus( msg( 'side-off' ) );
		setNotice( button( msg( 'side-turn-on' ), 'side-turn-on', 'normal', function () {
			setNotice( null );
			options.onConsent( true );
		} ) );
	}

	function setStatus( text ) {
		status.textContent = text;
	}

	function setError( code, detail ) {
		var key = ERROR_MESSAGES[ code ] || ERROR_MESSAGES.server;
		// Messages: side-error-unreachable, side-error-csp, side-error-timeout,
		// side-error-rate-limited, side-error-rejected, side-error-server, side-error-failed
		setNotice( message( code === 'csp' ? 'error' : 'warning', msg( key, detail || '' ) ) );
		root.setAttribute( 'data-side-error', code );
	}

	function clearError() {
		if ( root.hasAttribute( 'data-side-error' ) ) {
			root.removeAttribute( 'data-side-error' );
			setNotice( null );
		}
	}

	/* The dashboard link, for an http(s) URL only (isWebUrl); any other hides the link. */
	function setDashboard( url ) {
		var usable = isWebUrl( url );
		dashboard.hidden = !usable;
		if ( usable ) {
			dashboard.href = url;
		} else {
			dashboard.removeAttribute( 'href' );
		}
	}

	/* A suggestion's title as a link to its http(s) URL; any other URL is shown as text, never linked. */
	function suggestionLink( suggestion ) {
		var text = suggestion.title || suggestion.url;
		if ( !isWebUrl( suggestion.url ) ) {
			return el( 'span', 'side-suggestion__link side-suggestion__link--unlinked', text );
		}
		return el( 'a', 'side-suggestion__link', text,
			{ href: suggestion.url, target: '_blank', rel: 'noopener nofollow' } );
	}

	function suggestionRow( item, suggestion ) {
		var row = el( 'li', 'side-suggestion' ), link = suggestionLink( suggestion ),
			inserted = item.inserted && item.inserted[ suggestion.url ],
			reuse = suggestion.origin === 'article',
			// Messages: side-inserted, side-insert, side-reuse
			insert = button( msg( inserted ? 'side-inserted' : reuse ? 'side-reuse' : 'side-insert' ), 'side-insert', 'primary', function () {
				options.onInsert( item.key, suggestion );
			} );
		insert.disabled = !!inserted;
		row.appendChild( link );
		if ( reuse ) {
			row.appendChild( el( 'p', 'side-suggestion__origin', msg( 'side-reuse-note' ) ) );
		}
		if ( suggestion.evidence && suggestion.evidence.text ) {
			row.appendChild( el( 'q', 'side-suggestion__evidence', suggestion.evidence.text ) );
		}
		row.appendChild( insert );
		return row;
	}

	/* Why there is no verdict: the service's reason as plain text (never markup), no alert role. */
	function uncheckedNote( reason ) {
		var note = el( 'div', 'side-hint__unchecked', null );
		note.appendChild( el( 'p', 'side-hint__unchecked-text', msg( 'side-cannot-check' ) ) );
		if ( reason ) {
			note.appendChild( el( 'p', 'side-hint__reason', msg( 'side-cannot-check-reason', reason ) ) );
		}
		return note;
	}

	/* The claim's words the source does not back, each as plain text (never markup). */
	function unsupportedNote( words ) {
		var note = el( 'div', 'side-hint__unsupported', null );
		note.appendChild( el( 'span', 'side-hint__unsupported-label', msg( 'side-unsupported' ) ) );
		words.forEach( function ( word ) {
			note.appendChild( doc.createTextNode( ' ' ) );
			note.appendChild( el( 'mark', 'side-hint__word', word ) );
		} );
		return note;
	}

	/* The result's level; a value this gadget does not know reads as no result at all. */
	function levelOf( item ) {
		var level = item.result && item.result.level;
		if ( !item.result ) {
			return item.pending ? 'pending' : 'none';
		}
		return Object.prototype.hasOwnProperty.call( LEVEL_MESSAGES, level ) &&
			level !== 'pending' && level !== 'none' ? level : 'none';
	}

	/* Whether the row shows Side's guess: an unsure result, never a flagged one. */
	function isUnsure( item, level ) {
		return Boolean( item.result && item.result.unsure === true && item.result.flagged !== true &&
			Object.prototype.hasOwnProperty.call( UNSURE_MESSAGES, level ) );
	}

	/*
	 * How much a weak citation's gap matters, beside its level: "high: a number is not backed",
	 * "low: wording only" (a high gap of wording only is in an article about a living person).
	 * Only for a level that needs review, and only a severity this gadget knows.
	 */
	function severityNote( result, level ) {
		var severity = result && result.severity, missing = result && result.missing, text;
		if ( ( level !== 'partially_supported' && level !== 'not_supported' ) ||
			!Object.prototype.hasOwnProperty.call( SEVERITY_MESSAGES, severity ) ) {
			return null;
		}
		// Messages: side-severity-high, side-severity-low, side-missing-number, side-missing-date,
		// side-missing-name, side-missing-quotation, side-missing-wording, side-missing-wording-living
		text = msg( SEVERITY_MESSAGES[ severity ] );
		if ( Object.prototype.hasOwnProperty.call( MISSING_MESSAGES, missing ) ) {
			text = msg( 'side-severity', text, msg( missing === 'wording' && severity === 'high' ?
				'side-missing-wording-living' : MISSING_MESSAGES[ missing ] ) );
		}
		return el( 'span', 'side-severity side-severity--' + severity, text,
			{ title: msg( 'side-severity-title' ), 'data-side-severity': severity } );
	}

	function evidenceNote( result ) {
		var evidence = strongest( result.evidence );
		return el( 'div', 'side-hint__evidence', evidence ? msg( 'side-evidence', evidence ) : msg( 'side-no-evidence' ) );
	}

	function hintRow( item ) {
		var result = item.result, level = levelOf( item ), unsure = isUnsure( item, level ),
			flagged = Boolean( result && result.flagged === true && level !== 'cannot_check' ),
			row = el( 'li', 'side-hint side-hint--' + level + ( unsure ? ' side-hint--unsure' : '' ) +
				( flagged ? ' side-hint--flagged' : '' ), null,
			{ 'data-side-key': item.key, 'data-side-level': level, 'data-side-unsure': unsure ? 'true' : 'false' } ),
			head = el( 'div', 'side-hint__head' ), words, suggestions, severity;
		// Messages: side-verdict-supported, side-verdict-partially-supported, side-verdict-not-supported,
		// side-verdict-cannot-check, side-verdict-pending, side-verdict-none,
		// side-verdict-unsure-partially-supported, side-verdict-unsure-not-supported
		head.appendChild( unsure ?
			el( 'span', 'side-verdict side-verdict--unsure', msg( UNSURE_MESSAGES[ level ] ) ) :
			el( 'span', 'side-verdict side-verdict--' + level, msg( LEVEL_MESSAGES[ level ] ) ) );
		severity = severityNote( result, level );
		if ( severity ) {
			head.appendChild( severity );
		}
		head.appendChild( button( msg( 'side-show', item.number ), 'side-show', 'quiet', function () {
			options.onShow( item.key );
		} ) );
		head.appendChild( el( 'q', 'side-hint__claim', item.text ) );
		row.appendChild( head );
		if ( result && result.decided_by && result.decided_by !== 'Side' ) {
			row.appendChild( el( 'div', 'side-hint__decided-by', msg( 'side-decided-by', result.decided_by ) ) );
		}
		if ( level === 'cannot_check' ) {
			row.appendChild( uncheckedNote( result.level_reason || result.source_error ) );
		} else if ( result && level !== 'none' ) {
			words = ( result.unsupported || [] ).filter( function ( word ) {
				return typeof word === 'string' && word;
			} );
			if ( level === 'partially_supported' && words.length ) {
				row.appendChild( unsupportedNote( words ) );
			}
			row.appendChild( evidenceNote( result ) );
		}
		if ( result && level !== 'supported' && result.suggestions && result.suggestions.length ) {
			row.appendChild( el( 'div', 'side-hint__label', msg( 'side-suggestions' ) ) );
			suggestions = el( 'ul', 'side-hint__suggestions' );
			result.suggestions.forEach( function ( suggestion ) {
				suggestions.appendChild( suggestionRow( item, suggestion ) );
			} );
			row.appendChild( suggestions );
		}
		return row;
	}

	/**
	 * Show the citations (in text order) and the state of each.
	 *
	 * @param {Array.<Object>} items key, number, text, result (or null), pending (sent, no answer
	 *  yet), inserted (suggestion URLs already inserted)
	 */
	function render( items ) {
		list.textContent = '';
		items.forEach( function ( item ) {
			list.appendChild( hintRow( item ) );
		} );
	}

	return {
		element: root,
		showConsent: showConsent,
		showOff: showOff,
		setStatus: setStatus,
		setError: setError,
		clearError: clearError,
		setDashboard: setDashboard,
		render: render,
		notify: function ( key ) {
			setNotice( message( 'notice', msg( key ) ) );
		}
	};
}

module.exports = {
	createPanel: createPanel
};
