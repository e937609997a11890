/**
 * Clients for the two backends the gadget can ask, chosen by configuration (chooseBackend):
 *
 * - "side": the Side service's REST API (docs/service.md): POST /api/v1/checks, then
 *   GET /api/v1/checks/<id> until the check is done or failed;
 * - "liftwing": Side's verifier on Lift Wing (deploy/liftwing/README.md) through the API
 *   Gateway, one POST .../side-verifier:predict answered in the response. Since March 2026 the
 *   Content-Security-Policy of Wikimedia wikis lets a page connect to Wikimedia hosts only
 *   (T419234), so this is preferred on a Wikimedia wiki. Its answer is turned into the
 *   service's CHECK shape (checkFromLiftWing), so the panel renders one shape whichever answered.
 *
 * Both addresses come from the wiki's configuration page (MediaWiki:Gadget-side-config.json:
 * apiUrl, liftwingUrl); there is no built-in one, so the gadget never asks a backend that nobody
 * serves for that wiki. With neither configured, it asks nobody and says so.
 *
 * Every failure becomes one SideError with a `code` the hints panel has a calm message for:
 * "unreachable" (network down, refused, CORS), "csp" (the page's Content-Security-Policy
 * blocked the request), "timeout", "rate-limited" (429), "rejected" (other 4xx), "server"
 * (5xx or an unreadable answer) and "failed" (the check itself failed).
 */
'use strict';

/* Hosts under a Wikimedia Content-Security-Policy (the wikis and their sister projects). */
var WIKIMEDIA_HOST = /(^|\.)(wikipedia|wikimedia|wikidata|wiktionary|wikibooks|wikinews|wikiquote|wikisource|wikiversity|wikivoyage|wikifunctions|mediawiki)\.org$/i;
/* A language code as Lift Wing takes it (deploy/liftwing/side_verifier/request.py). */
var LANG = /^[a-z][a-z0-9]{1,11}(-[a-z0-9]{1,8}){0,2}$/;

var DEFAULTS = {
	/* One request's limit; a check may take longer, it is polled. */
	timeoutMs: 15000,
	/* First wait between polls; it grows by half each time, up to maxPollMs. */
	pollMs: 1000,
	maxPollMs: 5000,
	/* Give up on a check that is not done after this long. */
	maxWaitMs: 180000
};

/**
 * @class
 * @param {string} code
 * @param {string} [detail] The server's message, or the check's error
 */
function SideError( code, detail ) {
	this.code = code;
	this.detail = detail || '';
	this.message = code + ( detail ? ': ' + detail : '' );
}
SideError.prototype = Object.create( Error.prototype );
SideError.prototype.constructor = SideError;
SideError.prototype.name = 'SideError';

function originOf( url ) {
	var match = /^(https?:)?\/\/[^/?#]+/i.exec( url );
	return match ? match[ 0 ] : '';
}

/**
 * What every client shares: the page's CSP violations for the backend's origin, and turning a
 * failed request into one SideError.
 *
 * @param {Object} options See createClient
 * @param {string} origin The backend's origin ("https://api.wikimedia.org")
 * @return {Object} errorFor( xhr, textStatus ), later( fn, xhr )
 */
function failures( options, origin ) {
	var wait = options.setTimeout || setTimeout,
		cspBlocked = false;

	if ( options.document ) {
		options.document.addEventListener( 'securitypolicyviolation', function ( event ) {
			if ( origin && String( event.blockedURI || '' ).indexOf( origin ) === 0 ) {
				cspBlocked = true;
			}
		} );
	}

	/* The server's message: the Side API's {error: {message}}, KServe's {error: "..."}. */
	function messageOf( body ) {
		var error = body && body.error;
		if ( typeof error === 'string' ) {
			return error;
		}
		return error && typeof error.message === 'string' ? error.message : '';
	}

	function errorFor( xhr, textStatus ) {
		var status = xhr && xhr.status,
			detail = messageOf( xhr && xhr.responseJSON );
		if ( textStatus === 'timeout' ) {
			return new SideError( 'timeout' );
		}
		if ( !status ) {
			return new SideError( cspBlocked ? 'csp' : 'unreachable', origin );
		}
		if ( status === 429 ) {
			return new SideError( 'rate-limited', detail );
		}
		if ( status >= 400 && status < 500 ) {
			return new SideError( 'rejected', detail || String( status ) );
		}
		return new SideError( 'server', detail || String( status ) );
	}

	/* Reject with the request's error; a CSP violation event may arrive just after the failed
	   request, so a request that got no answer at all waits a moment. */
	function reject( deferred, xhr, textStatus ) {
		wait( function () {
			deferred.reject( errorFor( xhr, textStatus ) );
		}, xhr && xhr.status ? 0 : 50 );
	}

	return { errorFor: errorFor, reject: reject };
}

/**
 * @param {Object} options
 * @param {string} options.baseUrl The service, e.g. "https://side.example.org" (no /api/v1)
 * @param {Function} options.$ jQuery (for $.ajax and $.Deferred)
 * @param {Document} [options.document] Where CSP violations are reported
 * @param {Function} [options.setTimeout]
 * @param {number} [options.timeoutMs]
 * @param {number} [options.pollMs]
 * @param {number} [options.maxPollMs]
 * @param {number} [options.maxWaitMs]
 * @return {Object} Client with submit( payload ), get( id ) and origin
 */
function createClient( options ) {
	var $ = options.$,
		settings = $.extend( {}, DEFAULTS, options ),
		base = String( options.baseUrl || '' ).replace( /\/+$/, '' ),
		origin = originOf( base ),
		wait = options.setTimeout || setTimeout,
		failed = failures( options, origin );

	function request( method, path, body ) {
		var deferred = $.Deferred();
		$.ajax( {
			url: base + path,
			method: method,
			data: body === undefined ? undefined : JSON.stringify( body ),
			contentType: body === undefined ? undefined : 'application/json',
			dataType: 'json',
			timeout: settings.timeoutMs
		} ).then( function ( data ) {
			if ( data && data.check && data.check.id ) {
				deferred.resolve( data.check );
			} else {
				deferred.reject( new SideError( 'server', 'no check in the answer' ) );
			}
		}, function ( xhr, textStatus ) {
			failed.reject( deferred, xhr, textStatus );
		} );
		return deferred.promise();
	}

	function get( id ) {
		return request( 'GET', '/api/v1/checks/' + encodeURIComponent( id ) );
	}

	function follow( check, deferred, started, delay ) {
		if ( check.status === 'done' ) {
			deferred.resolve( check );
		} else if ( check.status === 'failed' ) {
			deferred.reject( new SideError( 'failed', check.error ) );
		} else if ( Date.now() - started > settings.maxWaitMs ) {
			deferred.reject( new SideError( 'timeout' ) );
		} else {
			wait( function () {
				get( check.id ).then( function ( next ) {
					follow( next, deferred, started, Math.min( delay * 1.5, settings.maxPollMs ) );
				}, deferred.reject );
			}, delay );
		}
	}

	/**
	 * Submit claims (or wikitext) and wait for the check to finish.
	 *
	 * @param {Object} payload Body of POST /api/v1/checks
	 * @return {jQuery.Promise} Resolved with the done CHECK, rejected with a SideError
	 */
	function submit( payload ) {
		var deferred = $.Deferred(), started = Date.now();
		request( 'POST', '/api/v1/checks', payload ).then( function ( check ) {
			follow( check, deferred, started, settings.pollMs );
		}, deferred.reject );
		return deferred.promise();
	}

	return { submit: submit, get: get, origin: origin };
}

/* eslint-disable camelcase -- field names of the service's CHECK and of Lift Wing's answer */

/**
 * One citation of Lift Wing's answer as a result of the service's CHECK
 * (gadget/server/present.py), the shape the panel renders.
 *
 * @param {Object} citation
 * @return {Object}
 */
function resultFromLiftWing( citation ) {
	var source = citation.source;
	return {
		client_key: citation.key,
		claim: citation.claim,
		url: citation.url,
		level: citation.level,
		level_reason: citation.reason || '',
		unsupported: citation.unsupported || [],
		score: citation.score,
		flagged: citation.flagged,
		unsure: citation.unsure === true,
		reportable: citation.reportable,
		reasons: citation.reasons || [],
		evidence: citation.evidence || [],
		suggestions: citation.suggestions || [],
		source_status: source,
		source_error: '',
		source_url: citation.source_url || '',
		source_copy: citation.source_copy || ''
	};
}

/**
 * Lift Wing's answer to a claims request as a done CHECK of the service; null when it is not
 * one (no list of citations).
 *
 * @param {Object} answer {model_name, model_version, lang, page_title, citations: [...]}
 * @param {Object} payload What the gadget asked (wiki, title, revision)
 * @return {Object|null}
 */
function checkFromLiftWing( answer, payload ) {
	if ( !answer || !Array.isArray( answer.citations ) ) {
		return null;
	}
	return {
		status: 'done',
		wiki: payload.wiki,
		title: payload.title,
		revision: payload.revision || null,
		model_version: answer.model_version,
		citations: answer.citations.length,
		results: answer.citations.filter( function ( citation ) {
			return citation && typeof citation === 'object';
		} ).map( resultFromLiftWing )
	};
}

/**
 * The Lift Wing request for the service's claims payload: the same claims, the page's title,
 * and its language when the wiki id names one ("enwiki" -> "en", "zh_min_nanwiki" -> "zh-min-nan").
 *
 * @param {Object} payload Body of POST /api/v1/checks
 * @return {Object}
 */
function liftWingRequest( payload ) {
	var body = { title: payload.title || '', claims: payload.claims || [] },
		match = /^([a-z0-9_]+)wiki$/.exec( String( payload.wiki || '' ) ),
		lang = match && match[ 1 ].replace( /_/g, '-' );
	if ( lang && LANG.test( lang ) ) {
		body.lang = lang;
	}
	return body;
}

/* eslint-enable camelcase */

/**
 * Client for Side's verifier on Lift Wing: the same submit( payload ) as createClient, one
 * request, no polling.
 *
 * @param {Object} options
 * @param {string} options.url The predict endpoint (the configuration page's liftwingUrl)
 * @param {string} options.userAgent Sent as Api-User-Agent (browsers may not set User-Agent;
 *  Wikimedia's API Gateway asks clients to say who they are this way)
 * @param {Function} options.$ jQuery
 * @param {Document} [options.document] Where CSP violations are reported
 * @param {Function} [options.setTimeout]
 * @param {number} [options.timeoutMs]
 * @return {Object} Client with submit( payload ) and origin
 */
function createLiftWingClient( options ) {
	var $ = options.$,
		url = options.url,
		origin = originOf( url ),
		settings = $.extend( {}, DEFAULTS, options ),
		failed = failures( options, origin );

	function submit( payload ) {
		var deferred = $.Deferred(),
			headers = {};
		if ( options.userAgent ) {
			headers[ 'Api-User-Agent' ] = options.userAgent;
		}
		$.ajax( {
			url: url,
			method: 'POST',
			data: JSON.stringify( liftWingRequest( payload ) ),
			contentType: 'application/json',
			headers: headers,
			dataType: 'json',
			timeout: settings.timeoutMs
		} ).then( function ( answer ) {
			var check = checkFromLiftWing( answer, payload );
			if ( check ) {
				deferred.resolve( check );
			} else {
				deferred.reject( new SideError( 'server', 'no citations in the answer' ) );
			}
		}, function ( xhr, textStatus ) {
			failed.reject( deferred, xhr, textStatus );
		} );
		return deferred.promise();
	}

	return { submit: submit, origin: origin };
}

/**
 * Whether the wiki at `server` (wgServer: "//en.wikipedia.org", "https://meta.wikimedia.org")
 * is a Wikimedia wiki, whose Content-Security-Policy allows Wikimedia hosts only.
 *
 * @param {string} server
 * @return {boolean}
 */
function isWikimediaServer( server ) {
	var match = /^(?:[a-z][a-z0-9+.-]*:)?\/\/([^/?#:]+)/i.exec( String( server || '' ) );
	return !!match && WIKIMEDIA_HOST.test( match[ 1 ] );
}

/**
 * The backend to ask, among those with an address (config.apiUrl for "side", config.liftwingUrl
 * for "liftwing"): config.backend "side" or "liftwing" as set; "auto" (the default) prefers Lift
 * Wing on a Wikimedia wiki, where nothing else may be reached, and the Side service elsewhere,
 * and takes the other when only that one is configured.
 *
 * @param {Object} config side-config.json's keys
 * @param {string} server The wiki's wgServer
 * @return {string} "side", "liftwing", or "" when the chosen backend has no address
 */
function chooseBackend( config, server ) {
	var configured = { side: !!config.apiUrl, liftwing: !!config.liftwingUrl },
		order = isWikimediaServer( server ) ? [ 'liftwing', 'side' ] : [ 'side', 'liftwing' ];
	if ( config.backend === 'side' || config.backend === 'liftwing' ) {
		order = [ config.backend ];
	}
	return order.filter( function ( name ) {
		return configured[ name ];
	} )[ 0 ] || '';
}

/**
 * The client for the configured backend (chooseBackend).
 *
 * @param {Object} config apiUrl, backend, liftwingUrl, userAgent, timeoutMs, pollMs, maxWaitMs
 * @param {string} server The wiki's wgServer
 * @param {Object} deps $, document, setTimeout
 * @return {Object|null} Client with submit( payload ) and origin; null when no backend is configured
 */
function createBackendClient( config, server, deps ) {
	var extend = deps.$.extend, backend = chooseBackend( config, server ),
		options = extend( {}, deps, { timeoutMs: config.timeoutMs, pollMs: config.pollMs,
			maxWaitMs: config.maxWaitMs } );
	if ( backend === 'liftwing' ) {
		return createLiftWingClient( extend( options, { url: config.liftwingUrl, userAgent: config.userAgent } ) );
	}
	return backend === 'side' ? createClient( extend( options, { baseUrl: config.apiUrl } ) ) : null;
}

module.exports = {
	createClient: createClient,
	createLiftWingClient: createLiftWingClient,
	createBackendClient: createBackendClient,
	chooseBackend: chooseBackend,
	isWikimediaServer: isWikimediaServer,
	checkFromLiftWing: checkFromLiftWing,
	liftWingRequest: liftWingRequest,
	SideError: SideError
};
