/**
 * Client for the Side service's REST API (docs/service.md): POST /api/v1/checks, then
 * GET /api/v1/checks/<id> until the check is done or failed.
 *
 * Every failure becomes one SideError with a `code` the hints panel has a calm message for:
 * "unreachable" (network down, refused, CORS), "csp" (the page's Content-Security-Policy
 * blocked the request), "timeout", "rate-limited" (429), "rejected" (other 4xx), "server"
 * (5xx or an unreadable answer) and "failed" (the check itself failed).
 */
'use strict';

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
 * @param {Object} options
 * @param {string} options.baseUrl The service, e.g. "https://side.example.org" (no /api/v1)
 * @param {Function} options.$ jQuery (for $.ajax and $.Deferred)
 * @param {Document} [options.document] Where CSP violations are reported
 * @param {Function} [options.setTimeout]
 * @param {number} [options.timeoutMs]
 * @param {number} [options.pollMs]
 * @param {number} [options.maxPollMs]
 * @param {number} [options.maxWaitMs]
 * @return {Object} Client with submit( payload ) and get( id )
 */
function createClient( options ) {
	var $ = options.$,
		settings = $.extend( {}, DEFAULTS, options ),
		base = String( options.baseUrl || '' ).replace( /\/+$/, '' ),
		origin = originOf( base ),
		wait = options.setTimeout || setTimeout,
		cspBlocked = false;

	if ( options.document ) {
		options.document.addEventListener( 'securitypolicyviolation', function ( event ) {
			if ( origin && String( event.blockedURI || '' ).indexOf( origin ) === 0 ) {
				cspBlocked = true;
			}
		} );
	}

	function errorFor( xhr, textStatus ) {
		var status = xhr && xhr.status,
			body = xhr && xhr.responseJSON,
			detail = body && body.error && body.error.message;
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
			// A CSP violation event may arrive just after the failed request: wait a moment.
			wait( function () {
				deferred.reject( errorFor( xhr, textStatus ) );
			}, xhr && xhr.status ? 0 : 50 );
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

module.exports = {
	createClient: createClient,
	SideError: SideError
};
