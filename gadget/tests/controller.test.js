'use strict';

const $ = require( 'jquery' );
const { createController, claimFor } = require( '../src/side-controller.js' );
const { createPanel } = require( '../src/side-hints.js' );
const { findRefs } = require( '../src/side-refs.js' );
const { SideError } = require( '../src/side-api.js' );
const messages = require( '../i18n/en.json' );
const { format } = require( './helpers/mw.js' );

const GOOD = 'Alsea operates Starbucks stores in Mexico.<ref>{{cite web |url=https://example.org/good |title=Good}}</ref>';
const BAD = ' Alsea was founded on the Moon in 1850.<ref>[https://example.org/bad Bad source]</ref>';
const NO_URL = ' It is large.<ref>Annual report, p. 4.</ref>';
const TEXT = GOOD + BAD + NO_URL;
const SUGGESTION = { url: 'https://news.example.org/alsea', title: 'Alsea history', score: 0.9,
	evidence: { text: 'Alsea was founded in Mexico City in 1997.' },
	cite: '{{cite web |url=https://news.example.org/alsea |title=Alsea history}}' };

function msg( key, ...params ) {
	return format( messages[ key ], params );
}

const flush = () => new Promise( ( resolve ) => {
	setTimeout( resolve, 30 );
} );

/* Wait until a condition holds (the controller answers through timers and promises). */
async function until( condition, what ) {
	const deadline = Date.now() + 3000;
	while ( !condition() ) {
		if ( Date.now() > deadline ) {
			throw new Error( `timed out waiting for ${ what }` );
		}
		await flush();
	}
}

const settled = () => until( () => document.querySelector( '.side-hint' ) &&
	!document.querySelector( '.side-hint[data-side-level="pending"]' ), 'the hints' );

/* A result as the API sends it, at one of the four verdict levels. */
function result( key, level, extra = {} ) {
	return Object.assign( { client_key: key, level, level_reason: '', unsupported: [], reportable: false,
		flagged: level === 'partially_supported' || level === 'not_supported', suggestions: [],
		evidence: [ { text: 'A weaker sentence.', score: 0.2 }, { text: `Evidence for ${ level }.`, score: 0.9 } ] }, extra );
}

/* An editor over a string, as side-editors.js provides for a textarea. */
function fakeEditor( text ) {
	const handlers = [];
	return {
		text,
		selection: null,
		getText() {
			return this.text;
		},
		insert( offset, inserted ) {
			this.text = this.text.slice( 0, offset ) + inserted + this.text.slice( offset );
		},
		select( start, end ) {
			this.selection = [ start, end ];
		},
		onChange: ( handler ) => handlers.push( handler ),
		type( newText ) {
			this.text = newText;
			handlers.forEach( ( handler ) => handler() );
		},
		mount: ( element ) => document.body.appendChild( element )
	};
}

/* A service that answers each submit from a queue of functions ( payload ) -> check | SideError. */
function fakeClient( answers ) {
	const client = { origin: 'http://127.0.0.1:8765', payloads: [] };
	client.submit = ( payload ) => {
		client.payloads.push( payload );
		const answer = answers.shift()( payload );
		const deferred = $.Deferred();
		setTimeout( () => ( answer instanceof SideError ? deferred.reject( answer ) : deferred.resolve( answer ) ), 0 );
		return deferred.promise();
	};
	return client;
}

function setup( { consent = 'unknown', answers = [], text = TEXT, config = {} } = {} ) {
	document.body.innerHTML = '';
	const state = { value: consent };
	const editor = fakeEditor( text );
	const client = fakeClient( answers );
	const handlers = {};
	const panel = createPanel( { document, msg,
		onConsent: ( granted ) => handlers.controller.consentGiven( granted ),
		onInsert: ( key, suggestion ) => handlers.controller.insert( key, suggestion ),
		onShow: ( key ) => handlers.controller.show( key ) } );
	const controller = handlers.controller = createController( { editor, client, panel, msg,
		consent: { state: () => state.value, set: ( value ) => {
			state.value = value;
		} },
		page: { wiki: 'testwiki', title: 'Alsea (company)', revision: 42 },
		config: Object.assign( { debounceMs: 0, maxClaims: 50 }, config ) } );
	mountAndStart( editor, panel, controller );
	return { editor, client, panel, controller, state };
}

function mountAndStart( editor, panel, controller ) {
	editor.mount( panel.element );
	controller.start();
}

const hint = ( level ) => document.querySelector( `.side-hint[data-side-level="${ level }"]` );
const click = ( selector ) => document.querySelector( selector ).click();

describe( 'the hints controller', () => {
	const [ good, bad ] = findRefs( TEXT );

	it( 'asks for consent first and sends nothing before it', async () => {
		const { client, state } = setup();
		expect( document.querySelector( '.side-panel__notice' ).textContent ).toContain( 'http://127.0.0.1:8765' );
		await flush();
		expect( client.payloads ).toHaveLength( 0 );
		click( '.side-consent-decline' );
		expect( state.value ).toBe( 'declined' );
		expect( document.querySelector( '.side-turn-on' ) ).not.toBeNull();
		expect( client.payloads ).toHaveLength( 0 );
	} );

	it( 'after consent, sends the citations with a URL and shows each verdict', async () => {
		const { client, state } = setup( { answers: [ ( payload ) => ( {
			id: 'c1', status: 'done', dashboard_url: 'http://127.0.0.1:8765/dashboard/checks/c1',
			page_url: 'http://127.0.0.1:8765/dashboard/pages/testwiki/Alsea_(company)',
			results: [ result( payload.claims[ 0 ].key, 'supported' ),
				result( payload.claims[ 1 ].key, 'not_supported', { suggestions: [ SUGGESTION ] } ) ] } ) ] } );
		click( '.side-consent-allow' );
		expect( state.value ).toBe( 'granted' );
		expect( hint( 'pending' ) ).not.toBeNull();
		expect( document.querySelector( '.side-panel__status' ).textContent ).toBe( 'Checking 2 citations…' );
		await settled();
		expect( client.payloads ).toEqual( [ {
			wiki: 'testwiki', title: 'Alsea (company)', revision: 42,
			claims: [
				{ key: good.key, text: 'Alsea operates Starbucks stores in Mexico.', left_context: good.leftContext,
					section: [], url: 'https://example.org/good', citation_title: 'Good' },
				{ key: bad.key, text: 'Alsea was founded on the Moon in 1850.', left_context: bad.leftContext,
					section: [], url: 'https://example.org/bad', citation_title: 'Bad source' }
			]
		} ] );
		expect( hint( 'supported' ).getAttribute( 'data-side-key' ) ).toBe( good.key );
		expect( hint( 'supported' ).querySelector( '.side-insert' ) ).toBeNull();
		expect( hint( 'supported' ).querySelector( '.side-verdict' ).textContent ).toBe( 'Supported' );
		expect( hint( 'not_supported' ).querySelector( '.side-verdict' ).textContent ).toBe( 'Not supported' );
		expect( hint( 'not_supported' ).textContent ).toContain( 'Source says: “Evidence for not_supported.”' );
		expect( hint( 'not_supported' ).querySelector( '.side-suggestion__link' ).href ).toBe( SUGGESTION.url );
		expect( document.querySelector( '.side-panel__dashboard' ).href ).toBe(
			'http://127.0.0.1:8765/dashboard/pages/testwiki/Alsea_(company)' );
		expect( document.querySelector( '.side-panel__status' ).textContent ).toBe( '2 citations with a link.' );
	} );

	it( 'says calmly that a source could not be checked, and why, without a failure\'s styling', async () => {
		const reason = 'login wall ("<b>Sign in</b> to continue"): the page asks to sign in';
		setup( { consent: 'granted', answers: [ ( payload ) => ( { id: 'c1', status: 'done', results: [
			result( payload.claims[ 0 ].key, 'supported' ),
			result( payload.claims[ 1 ].key, 'cannot_check', { source_status: 'cannot_check', source_error: reason,
				level_reason: reason, score: null, evidence: [] } ) ] } ) ] } );
		await settled();
		const row = hint( 'cannot_check' );
		expect( row.getAttribute( 'data-side-key' ) ).toBe( bad.key );
		expect( row.querySelector( '.side-verdict' ).textContent ).toBe( 'Could not be checked' );
		expect( row.querySelector( '.side-hint__unchecked-text' ).textContent ).toBe(
			'Side could not check this source, so this is not a judgement of the citation.' );
		expect( row.querySelector( '.side-hint__reason' ).textContent ).toBe( `Reason: ${ reason }` );
		expect( row.querySelector( 'b' ) ).toBeNull();
		expect( row.textContent ).not.toMatch( /not supported|fails/i );
		expect( row.textContent ).not.toContain( 'No sentence of the source' );
		expect( row.querySelector( '[class*="not_supported"], .cdx-message, [role="alert"], .side-insert' ) ).toBeNull();
		expect( document.querySelector( '.side-panel__notice' ).textContent ).toBe( '' );
	} );

	it( 'gives the reason the service names for a citation it could not check', async () => {
		setup( { consent: 'granted', answers: [ ( payload ) => ( { id: 'c1', status: 'done', results: [
			result( payload.claims[ 0 ].key, 'supported' ),
			result( payload.claims[ 1 ].key, 'cannot_check', { source_status: 'fetched', source_error: '',
				level_reason: 'the source is in a language the model cannot read (th)', score: null } ) ] } ) ] } );
		await settled();
		expect( hint( 'cannot_check' ).querySelector( '.side-hint__reason' ).textContent ).toBe(
			'Reason: the source is in a language the model cannot read (th)' );
	} );

	it( 'links to the check\'s page when the service sends no page_url', async () => {
		setup( { consent: 'granted', answers: [ ( payload ) => ( {
			id: 'c1', status: 'done', dashboard_url: 'http://127.0.0.1:8765/dashboard/checks/c1',
			results: payload.claims.map( ( claim ) => result( claim.key, 'supported' ) ) } ) ] } );
		await settled();
		expect( document.querySelector( '.side-panel__dashboard' ).href ).toBe( 'http://127.0.0.1:8765/dashboard/checks/c1' );
	} );

	it( 'links to the configured dashboardUrl, with the wiki and title filled in, over page_url', async () => {
		setup( { consent: 'granted', config: { dashboardUrl: 'https://patrol.example/$1/$2' }, answers: [ ( payload ) => ( {
			id: 'c1', status: 'done', page_url: 'http://127.0.0.1:8765/dashboard/pages/testwiki/Alsea_(company)',
			results: payload.claims.map( ( claim ) => result( claim.key, 'supported' ) ) } ) ] } );
		await settled();
		expect( document.querySelector( '.side-panel__dashboard' ).href ).toBe(
			'https://patrol.example/testwiki/Alsea_(company)' );
	} );

	it( 'inserts the suggestion after the weak citation and checks only what changed', async () => {
		const { editor, client } = setup( { consent: 'granted', answers: [
			( payload ) => ( { id: 'c1', status: 'done', results: [ result( payload.claims[ 0 ].key, 'supported' ),
				result( payload.claims[ 1 ].key, 'not_supported', { suggestions: [ SUGGESTION ] } ) ] } ),
			( payload ) => ( { id: 'c2', status: 'done', results: payload.claims.map( ( claim ) => result( claim.key, 'supported' ) ) } )
		] } );
		await settled();
		click( '.side-hint[data-side-level="not_supported"] .side-insert' );
		expect( editor.text ).toBe( GOOD + BAD + `<ref>${ SUGGESTION.cite }</ref>` + NO_URL );
		expect( hint( 'not_supported' ).querySelector( '.side-insert' ).disabled ).toBe( true );
		expect( hint( 'not_supported' ).querySelector( '.side-insert' ).textContent ).toBe( 'Inserted' );
		await until( () => document.querySelectorAll( '.side-hint[data-side-level="supported"]' ).length === 2,
			'the inserted citation\'s verdict' );
		expect( client.payloads ).toHaveLength( 2 );
		expect( client.payloads[ 1 ].claims.map( ( claim ) => claim.url ) ).toEqual( [ SUGGESTION.url ] );
		expect( document.querySelectorAll( '.side-hint' ) ).toHaveLength( 3 );
	} );

	it( 'selects a citation in the text', async () => {
		const { editor } = setup( { consent: 'granted', answers: [ () => ( { id: 'c', status: 'done', results: [] } ) ] } );
		await settled();
		document.querySelectorAll( '.side-show' )[ 1 ].click();
		expect( editor.selection ).toEqual( [ bad.start, bad.end ] );
	} );

	it( 'shows one calm message when the service is down and waits before trying again', async () => {
		const { editor, client, panel } = setup( { consent: 'granted', answers: [
			() => new SideError( 'unreachable', 'http://127.0.0.1:8765' ) ] } );
		await until( () => panel.element.hasAttribute( 'data-side-error' ), 'the error' );
		expect( panel.element.getAttribute( 'data-side-error' ) ).toBe( 'unreachable' );
		expect( document.querySelectorAll( '.cdx-message' ) ).toHaveLength( 1 );
		expect( document.querySelector( '.cdx-message' ).textContent ).toContain( 'cannot be reached' );
		expect( hint( 'pending' ) ).toBeNull();
		expect( document.querySelectorAll( '.side-hint[data-side-level="none"]' ) ).toHaveLength( 2 );
		editor.type( TEXT + ' More text.' );
		await flush();
		expect( client.payloads ).toHaveLength( 1 );
		expect( document.querySelectorAll( '.side-hint' ) ).toHaveLength( 2 );
	} );

	it( 'names the CSP as the cause when the browser blocked the request', async () => {
		setup( { consent: 'granted', answers: [ () => new SideError( 'csp', 'http://127.0.0.1:8765' ) ] } );
		await until( () => document.querySelector( '.cdx-message--error' ), 'the error' );
		const message = document.querySelector( '.cdx-message--error' );
		expect( message.textContent ).toContain( 'Content-Security-Policy' );
		expect( message.textContent ).toContain( 'http://127.0.0.1:8765' );
	} );

	it( 'does not resend claims the service refused', async () => {
		const { editor, client } = setup( { consent: 'granted', answers: [
			() => new SideError( 'rejected', 'bad claims' ),
			() => ( { id: 'c', status: 'done', results: [] } ) ] } );
		await settled();
		editor.type( TEXT );
		await flush();
		expect( client.payloads ).toHaveLength( 1 );
		expect( hint( 'pending' ) ).toBeNull();
		expect( document.querySelectorAll( '.side-hint[data-side-level="none"]' ) ).toHaveLength( 2 );
		expect( document.querySelector( '.side-verdict' ).textContent ).toBe( 'Not checked yet' );
	} );
} );

describe( 'claimFor', () => {
	const use = { key: 'k', text: 'A claim.', leftContext: 'Before. A claim.', section: [ 'History' ],
		url: 'https://example.org/a', title: 'A' };

	it( 'sends what the service accepts and nothing it would refuse', () => {
		expect( claimFor( use ) ).toEqual( { key: 'k', text: 'A claim.', left_context: 'Before. A claim.',
			section: [ 'History' ], url: 'https://example.org/a', citation_title: 'A' } );
		expect( claimFor( Object.assign( {}, use, { url: '//example.org/a' } ) ).url ).toBe( 'https://example.org/a' );
		expect( claimFor( Object.assign( {}, use, { url: 'ftp://example.org/a' } ) ) ).toBeNull();
		expect( claimFor( Object.assign( {}, use, { url: 'https://user@example.org/' } ) ) ).toBeNull();
		expect( claimFor( Object.assign( {}, use, { url: null } ) ) ).toBeNull();
		expect( claimFor( Object.assign( {}, use, { text: '' } ) ) ).toBeNull();
	} );

	it( 'cuts long fields to the service\'s limits and drops control characters', () => {
		const long = claimFor( Object.assign( {}, use, { text: 'x'.repeat( 2500 ) + ' end.',
			leftContext: 'y'.repeat( 6000 ), title: 'T\u0007itle' + 'z'.repeat( 600 ),
			section: Array( 12 ).fill( 'S'.repeat( 300 ) ) } ) );
		expect( long.text ).toHaveLength( 2000 );
		expect( long.text.endsWith( ' end.' ) ).toBe( true );
		expect( long.left_context ).toHaveLength( 5000 );
		expect( long.citation_title.startsWith( 'Title' ) ).toBe( true );
		expect( long.citation_title ).toHaveLength( 500 );
		expect( long.section ).toHaveLength( 10 );
		expect( long.section[ 0 ] ).toHaveLength( 255 );
		expect( claimFor( Object.assign( {}, use, { text: 'Lone \ud800 surrogate.' } ) ).text ).toBe( 'Lone  surrogate.' );
	} );
} );
