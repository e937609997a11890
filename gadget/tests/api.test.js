'use strict';

const $ = require( 'jquery' );
const { createClient, SideError } = require( '../src/side-api.js' );
const { startServer, closedPort } = require( './helpers/server.js' );

const CHECK = { id: 'abc123', status: 'queued', wiki: 'testwiki', title: 'Alsea', results: [] };
const DONE = Object.assign( {}, CHECK, { status: 'done', dashboard_url: 'http://side/dashboard/checks/abc123',
	results: [ { client_key: 'k1', level: 'not_supported', level_reason: '', unsupported: [], reportable: true,
		flagged: true } ] } );

function client( baseUrl, extra = {} ) {
	return createClient( Object.assign( { baseUrl, $, document, pollMs: 20, maxPollMs: 50, timeoutMs: 2000 }, extra ) );
}

function failure( promise ) {
	return new Promise( ( resolve, reject ) => {
		promise.then( () => reject( new Error( 'expected a failure' ) ), resolve );
	} );
}

describe( 'the API client against a real HTTP server', () => {
	let server;

	beforeEach( async () => {
		server = await startServer();
	} );

	afterEach( () => server.close() );

	it( 'posts JSON claims and polls the check until it is done', async () => {
		server.route( 'POST /api/v1/checks', { status: 202, json: { check: CHECK } } );
		server.route( 'GET /api/v1/checks/abc123',
			{ status: 200, json: { check: CHECK } },
			{ status: 200, json: { check: Object.assign( {}, CHECK, { status: 'running' } ) } },
			{ status: 200, json: { check: DONE } } );
		const payload = { wiki: 'testwiki', title: 'Alsea', claims: [ { key: 'k1', text: 'A claim.', url: 'https://example.org' } ] };
		const check = await client( server.url + '/' ).submit( payload );
		expect( check ).toEqual( DONE );
		expect( server.seen[ 0 ] ).toEqual( { method: 'POST', path: '/api/v1/checks', body: payload,
			contentType: 'application/json' } );
		expect( server.seen.slice( 1 ).map( ( request ) => request.path ) ).toEqual(
			[ '/api/v1/checks/abc123', '/api/v1/checks/abc123', '/api/v1/checks/abc123' ] );
	} );

	it( 'resolves at once when the work was already done (200)', async () => {
		server.route( 'POST /api/v1/checks', { status: 200, json: { check: DONE } } );
		await expect( client( server.url ).submit( {} ) ).resolves.toEqual( DONE );
		expect( server.seen ).toHaveLength( 1 );
	} );

	it( 'turns a failed check, a 429, a 400 and a 500 into calm error codes', async () => {
		server.route( 'POST /api/v1/checks', { status: 202, json: { check: CHECK } } );
		server.route( 'GET /api/v1/checks/abc123', { status: 200,
			json: { check: Object.assign( {}, CHECK, { status: 'failed', error: 'worker died' } ) } } );
		let error = await failure( client( server.url ).submit( {} ) );
		expect( error ).toBeInstanceOf( SideError );
		expect( error ).toMatchObject( { code: 'failed', detail: 'worker died' } );

		server.route( 'POST /api/v1/checks', { status: 429, json: { error: { code: 'rate_limited', message: 'slow down' } } } );
		expect( await failure( client( server.url ).submit( {} ) ) ).toMatchObject( { code: 'rate-limited' } );

		server.route( 'POST /api/v1/checks', { status: 400, json: { error: { code: 'bad_request', message: 'claims[0].text is empty' } } } );
		expect( await failure( client( server.url ).submit( {} ) ) )
			.toMatchObject( { code: 'rejected', detail: 'claims[0].text is empty' } );

		server.route( 'POST /api/v1/checks', { status: 500, json: { oops: true } } );
		error = await failure( client( server.url ).submit( {} ) );
		expect( error.code ).toBe( 'server' );
	} );

	it( 'times out a slow answer and a check that never finishes', async () => {
		server.route( 'POST /api/v1/checks', { status: 202, json: { check: CHECK }, delayMs: 500 } );
		expect( await failure( client( server.url, { timeoutMs: 100 } ).submit( {} ) ) ).toMatchObject( { code: 'timeout' } );

		server.route( 'POST /api/v1/checks', { status: 202, json: { check: CHECK } } );
		server.route( 'GET /api/v1/checks/abc123', { status: 200, json: { check: CHECK } } );
		expect( await failure( client( server.url, { maxWaitMs: 150 } ).submit( {} ) ) ).toMatchObject( { code: 'timeout' } );
	} );
} );

describe( 'the API client when the service cannot be reached', () => {
	beforeEach( () => {
		// jsdom prints every refused connection; the gadget itself stays quiet.
		jest.spyOn( console, 'error' ).mockImplementation( () => {} );
	} );

	afterEach( () => jest.restoreAllMocks() );

	it( 'reports an unreachable service', async () => {
		const port = await closedPort();
		const error = await failure( client( `http://127.0.0.1:${ port }` ).submit( {} ) );
		expect( error ).toMatchObject( { code: 'unreachable', detail: `http://127.0.0.1:${ port }` } );
	} );

	it( 'reports a request blocked by the content security policy', async () => {
		const port = await closedPort();
		const base = `http://127.0.0.1:${ port }`;
		const api = client( base );
		const pending = failure( api.submit( {} ) );
		// What the browser fires when connect-src does not allow the service's origin.
		const event = new Event( 'securitypolicyviolation' );
		event.blockedURI = `${ base }/api/v1/checks`;
		document.dispatchEvent( event );
		expect( await pending ).toMatchObject( { code: 'csp' } );
		expect( api.origin ).toBe( base );
	} );
} );
