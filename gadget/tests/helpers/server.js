'use strict';

/**
 * A real HTTP server on 127.0.0.1 for the API client tests: canned JSON answers per
 * "METHOD /path", CORS headers like the Flask backend's (and Api-User-Agent allowed, as
 * Wikimedia's API Gateway allows it), optional delays, and a log of
 * the requests it saw.
 */
const http = require( 'http' );

function startServer() {
	const routes = {};
	const seen = [];
	const headers = [];
	const server = http.createServer( ( request, response ) => {
		let body = '';
		request.on( 'data', ( chunk ) => {
			body += chunk;
		} );
		request.on( 'end', () => {
			const cors = {
				'Access-Control-Allow-Origin': request.headers.origin || '*',
				'Access-Control-Allow-Headers': 'Content-Type, Api-User-Agent',
				'Access-Control-Allow-Methods': 'GET, POST'
			};
			if ( request.method === 'OPTIONS' ) {
				response.writeHead( 204, cors );
				response.end();
				return;
			}
			headers.push( request.headers );
			seen.push( { method: request.method, path: request.url, body: body ? JSON.parse( body ) : null,
				contentType: request.headers[ 'content-type' ] } );
			const queue = routes[ `${ request.method } ${ request.url }` ] || [];
			const answer = queue.length > 1 ? queue.shift() : queue[ 0 ] ||
				{ status: 404, json: { error: { code: 'not_found', message: 'unknown' } } };
			setTimeout( () => {
				response.writeHead( answer.status, Object.assign( { 'Content-Type': 'application/json' }, cors ) );
				response.end( JSON.stringify( answer.json ) );
			}, answer.delayMs || 0 );
		} );
	} );
	return new Promise( ( resolve ) => {
		server.listen( 0, '127.0.0.1', () => {
			resolve( {
				url: `http://127.0.0.1:${ server.address().port }`,
				seen,
				/* Each request's headers (lower-cased names), in the order of `seen`. */
				headers,
				/* Answers for a route, used in turn; the last one repeats. */
				route: ( key, ...answers ) => {
					routes[ key ] = answers;
				},
				close: () => new Promise( ( done ) => {
					server.closeAllConnections();
					server.close( done );
				} )
			} );
		} );
	} );
}

/* A port on 127.0.0.1 that nothing listens on. */
function closedPort() {
	return new Promise( ( resolve ) => {
		const server = http.createServer();
		server.listen( 0, '127.0.0.1', () => {
			const port = server.address().port;
			server.close( () => resolve( port ) );
		} );
	} );
}

module.exports = { startServer, closedPort };
