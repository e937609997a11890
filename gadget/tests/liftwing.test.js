'use strict';

/**
 * The gadget's Lift Wing backend: the client against a real HTTP server answering as Side's
 * KServe model server does (deploy/liftwing/side_verifier/model.py), its answer rendered by the
 * real hints panel, and the choice of backend from the wiki's address.
 */
const $ = require( 'jquery' );
const api = require( '../src/side-api.js' );
const { createPanel } = require( '../src/side-hints.js' );
const messages = require( '../i18n/en.json' );
const { format } = require( './helpers/mw.js' );
const { startServer, closedPort } = require( './helpers/server.js' );

const PATH = '/service/lw/inference/v1/models/side-verifier:predict';
const SUGGESTION = { url: 'https://news.example.org/alsea', title: 'Alsea history', score: 0.9,
	evidence: { text: 'Alsea was founded in Mexico City in 1997 by the Torrado family.', sentence_index: 0, score: 0.97 },
	cite: '{{cite web |url=https://news.example.org/alsea |title=Alsea history}}' };
/* Lift Wing's answer to a claims request: citation_output() of model.py for each claim. */
const ANSWER = {
	model_name: 'side-verifier', model_version: 'f0d843b48b2e', lang: 'en', page_title: 'Alsea (company)',
	citations: [
		{ key: 'k-good', claim: 'Alsea operates Starbucks in Mexico.', url: 'https://example.org/a',
			level: 'supported', level_text: 'supported', score: 0.93,
			evidence: [ { text: 'Alsea operates Starbucks coffee shops in Mexico.', sentence_index: 0, score: 0.93 } ],
			unsupported: [], reason: '', flagged: false, reportable: false, reasons: [],
			source: 'fetched', source_url: 'https://example.org/a', source_copy: 'live', suggestions: [] },
		{ key: 'k-part', claim: 'Alsea was founded in Mexico City in 1997.', url: 'https://example.org/b',
			level: 'partially_supported', level_text: 'partially supported', score: 0.55,
			evidence: [ { text: 'Alsea is based in Mexico City.', sentence_index: 2, score: 0.55 } ],
			unsupported: [ '1997' ], reason: '', flagged: true, reportable: false,
			reasons: [ 'partially supported: support 0.55' ], source: 'fetched', source_url: 'https://example.org/b',
			source_copy: 'live', suggestions: [ SUGGESTION ] },
		{ key: 'k-wall', claim: 'Alsea runs Domino\'s.', url: 'https://paywall.example.org/c',
			level: 'cannot_check', level_text: 'cannot check', score: null, evidence: [], unsupported: [],
			reason: 'paywall: only a teaser was served', flagged: false, reportable: false, reasons: [],
			source: 'cannot_check', source_url: null, source_copy: '', suggestions: [] }
	]
};
const PAYLOAD = { wiki: 'enwiki', title: 'Alsea (company)', revision: 42, claims: [
	{ key: 'k-good', text: 'Alsea operates Starbucks in Mexico.', left_context: '', section: [ 'Business' ],
		url: 'https://example.org/a', citation_title: 'Annual report' } ] };

function msg( key, ...params ) {
	return format( messages[ key ], params );
}

function failure( promise ) {
	return new Promise( ( resolve, reject ) => {
		promise.then( () => reject( new Error( 'expected a failure' ) ), resolve );
	} );
}

function liftwing( url, extra = {} ) {
	return api.createLiftWingClient( Object.assign( { url, $, document, timeoutMs: 2000,
		userAgent: 'Side citation gadget (//en.wikipedia.org)' }, extra ) );
}

describe( 'the Lift Wing client against a real HTTP server', () => {
	let server;

	beforeEach( async () => {
		server = await startServer();
	} );

	afterEach( () => server.close() );

	it( 'asks once with the claims, the language and an Api-User-Agent, and answers a done check', async () => {
		server.route( `POST ${ PATH }`, { status: 200, json: ANSWER } );
		const check = await liftwing( server.url + PATH ).submit( PAYLOAD );
		expect( server.seen ).toEqual( [ { method: 'POST', path: PATH, contentType: 'application/json',
			body: { lang: 'en', title: 'Alsea (company)', claims: PAYLOAD.claims } } ] );
		expect( server.headers[ 0 ][ 'api-user-agent' ] ).toBe( 'Side citation gadget (//en.wikipedia.org)' );
		expect( check.status ).toBe( 'done' );
		expect( check.results.map( ( r ) => [ r.client_key, r.level ] ) ).toEqual(
			[ [ 'k-good', 'supported' ], [ 'k-part', 'partially_supported' ], [ 'k-wall', 'cannot_check' ] ] );
		expect( check.results[ 1 ] ).toMatchObject( { unsupported: [ '1997' ], suggestions: [ SUGGESTION ],
			evidence: ANSWER.citations[ 1 ].evidence, reasons: [ 'partially supported: support 0.55' ],
			flagged: true, unsure: false, reportable: false, score: 0.55 } );
		expect( check.results[ 2 ] ).toMatchObject( { level_reason: 'paywall: only a teaser was served',
			source_status: 'cannot_check', source_url: '' } );
		expect( check.dashboard_url ).toBeUndefined();
	} );

	it( 'turns KServe\'s 400, a 429 and an answer without citations into calm error codes', async () => {
		server.route( `POST ${ PATH }`, { status: 400, json: { error: 'claims[0].url: must be an http(s) URL' } } );
		expect( await failure( liftwing( server.url + PATH ).submit( PAYLOAD ) ) )
			.toMatchObject( { code: 'rejected', detail: 'claims[0].url: must be an http(s) URL' } );
		server.route( `POST ${ PATH }`, { status: 429, json: { httpCode: 429, httpReason: 'Too Many Requests' } } );
		expect( await failure( liftwing( server.url + PATH ).submit( PAYLOAD ) ) ).toMatchObject( { code: 'rate-limited' } );
		server.route( `POST ${ PATH }`, { status: 200, json: { model_name: 'side-verifier' } } );
		expect( await failure( liftwing( server.url + PATH ).submit( PAYLOAD ) ) )
			.toMatchObject( { code: 'server', detail: 'no citations in the answer' } );
	} );

	it( 'sends no language for a wiki id that names none', async () => {
		server.route( `POST ${ PATH }`, { status: 200, json: Object.assign( {}, ANSWER, { citations: [] } ) } );
		await liftwing( server.url + PATH ).submit( Object.assign( {}, PAYLOAD, { wiki: 'commons' } ) );
		await liftwing( server.url + PATH ).submit( Object.assign( {}, PAYLOAD, { wiki: 'zh_min_nanwiki' } ) );
		expect( server.seen.map( ( seen ) => seen.body.lang ) ).toEqual( [ undefined, 'zh-min-nan' ] );
	} );
} );

describe( 'the Lift Wing client when it is blocked', () => {
	beforeEach( () => {
		jest.spyOn( console, 'error' ).mockImplementation( () => {} );
	} );

	afterEach( () => jest.restoreAllMocks() );

	it( 'names a Content-Security-Policy block of its origin, and an unreachable endpoint', async () => {
		const port = await closedPort();
		const url = `http://127.0.0.1:${ port }${ PATH }`;
		let client = liftwing( url );
		expect( client.origin ).toBe( `http://127.0.0.1:${ port }` );
		expect( await failure( client.submit( PAYLOAD ) ) ).toMatchObject( { code: 'unreachable' } );
		client = liftwing( url );
		const pending = failure( client.submit( PAYLOAD ) );
		const event = new Event( 'securitypolicyviolation' );
		event.blockedURI = url;
		document.dispatchEvent( event );
		expect( await pending ).toMatchObject( { code: 'csp', detail: `http://127.0.0.1:${ port }` } );
	} );
} );

describe( 'Lift Wing\'s answer in the hints panel', () => {
	it( 'shows the levels, the unsupported words, the evidence, the reason and the suggestions', () => {
		const check = api.checkFromLiftWing( ANSWER, PAYLOAD );
		const panel = createPanel( { document, msg, onConsent: () => {}, onShow: () => {}, onInsert: () => {} } );
		document.body.innerHTML = '';
		document.body.appendChild( panel.element );
		panel.render( check.results.map( ( result, n ) => ( { key: result.client_key, number: n + 1,
			text: result.claim, result } ) ) );
		const rows = [ ...document.querySelectorAll( '.side-hint' ) ];
		expect( rows.map( ( row ) => row.getAttribute( 'data-side-level' ) ) ).toEqual(
			[ 'supported', 'partially_supported', 'cannot_check' ] );
		expect( rows[ 0 ].textContent ).toContain( 'Alsea operates Starbucks coffee shops in Mexico.' );
		expect( [ ...rows[ 1 ].querySelectorAll( '.side-hint__word' ) ].map( ( w ) => w.textContent ) ).toEqual( [ '1997' ] );
		expect( rows[ 1 ].querySelector( '.side-suggestion a' ).getAttribute( 'href' ) ).toBe( SUGGESTION.url );
		expect( rows[ 2 ].querySelector( '.side-hint__reason' ).textContent ).toContain( 'paywall: only a teaser was served' );
	} );
} );

describe( 'the backend a wiki gets', () => {
	const SIDE = 'https://side.toolforge.org';
	const LIFTWING = 'https://api.wikimedia.org/service/lw/inference/v1/models/side-verifier:predict';

	it( 'prefers Lift Wing on Wikimedia wikis and the Side service elsewhere, among those configured', () => {
		const both = { backend: 'auto', apiUrl: SIDE, liftwingUrl: LIFTWING };
		const choose = ( server, config = both ) => api.chooseBackend( config, server );
		expect( [ '//en.wikipedia.org', 'https://meta.wikimedia.org', '//www.wikidata.org', '//de.wiktionary.org',
			'https://www.mediawiki.org' ].map( ( s ) => choose( s ) ) ).toEqual( Array( 5 ).fill( 'liftwing' ) );
		expect( [ 'http://127.0.0.1:8080', 'https://wiki.example.org', '//evilwikipedia.org',
			'https://en.wikipedia.org.example.com', '' ].map( ( s ) => choose( s ) ) ).toEqual( Array( 5 ).fill( 'side' ) );
		expect( choose( '//en.wikipedia.org', Object.assign( {}, both, { backend: 'side' } ) ) ).toBe( 'side' );
		expect( choose( 'http://127.0.0.1:8080', Object.assign( {}, both, { backend: 'liftwing' } ) ) ).toBe( 'liftwing' );
		// Only one configured: that one, wherever the wiki is.
		expect( choose( '//en.wikipedia.org', { backend: 'auto', apiUrl: SIDE } ) ).toBe( 'side' );
		expect( choose( 'https://wiki.example.org', { backend: 'auto', liftwingUrl: LIFTWING } ) ).toBe( 'liftwing' );
	} );

	it( 'is none when the configuration gives the chosen backend no address', () => {
		const deps = { $, document };
		const shipped = require( '../src/side-config.json' );
		expect( shipped.apiUrl ).toBe( '' );
		expect( shipped.liftwingUrl ).toBe( '' );
		[ '//en.wikipedia.org', 'https://wiki.example.org' ].forEach( ( server ) => {
			expect( api.chooseBackend( shipped, server ) ).toBe( '' );
			expect( api.createBackendClient( shipped, server, deps ) ).toBeNull();
		} );
		expect( api.chooseBackend( { backend: 'liftwing', apiUrl: SIDE }, '//en.wikipedia.org' ) ).toBe( '' );
		expect( api.chooseBackend( { backend: 'side', liftwingUrl: LIFTWING }, 'https://wiki.example.org' ) ).toBe( '' );
	} );

	it( 'is asked at the configured address', () => {
		const deps = { $, document };
		const config = { backend: 'auto', apiUrl: SIDE, liftwingUrl: LIFTWING };
		expect( api.createBackendClient( config, '//en.wikipedia.org', deps ).origin ).toBe( 'https://api.wikimedia.org' );
		const elsewhere = api.createBackendClient( config, 'https://wiki.example.org', deps );
		expect( elsewhere.origin ).toBe( SIDE );
		expect( typeof elsewhere.get ).toBe( 'function' );
	} );
} );
