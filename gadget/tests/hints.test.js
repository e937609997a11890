'use strict';

const fs = require( 'fs' );
const path = require( 'path' );
const { createPanel } = require( '../src/side-hints.js' );
const messages = require( '../i18n/en.json' );
const documentation = require( '../i18n/qqq.json' );
const { format } = require( './helpers/mw.js' );

const SRC = path.join( __dirname, '..', 'src' );
const LEVELS = [ 'supported', 'partially_supported', 'not_supported', 'cannot_check' ];
const SUGGESTION = { url: 'https://news.example.org/alsea', title: 'Alsea history', score: 0.9,
	evidence: { text: 'Alsea was founded in Mexico City in 1997.' },
	cite: '{{cite web |url=https://news.example.org/alsea |title=Alsea history}}' };

function msg( key, ...params ) {
	if ( !Object.prototype.hasOwnProperty.call( messages, key ) ) {
		throw new Error( `no message ${ key }` );
	}
	return format( messages[ key ], params );
}

/* A result as the API sends it at ``level``. */
function result( level, extra = {} ) {
	return Object.assign( { client_key: level, level, level_reason: '', unsupported: [], reportable: false,
		flagged: level === 'partially_supported' || level === 'not_supported', score: 0.5, suggestions: [],
		evidence: [ { text: `Evidence for ${ level }.`, score: 0.8 } ] }, extra );
}

/* The panel, mounted with side.css, showing one row per item. */
function panelWith( items, inserts = [] ) {
	document.head.innerHTML = '';
	document.body.innerHTML = '';
	const style = document.createElement( 'style' );
	style.textContent = fs.readFileSync( path.join( SRC, 'side.css' ), 'utf8' );
	document.head.appendChild( style );
	const panel = createPanel( { document, msg, onConsent: () => {}, onShow: () => {},
		onInsert: ( key, suggestion ) => inserts.push( [ key, suggestion.url ] ) } );
	document.body.appendChild( panel.element );
	panel.render( items.map( ( item, n ) => Object.assign( { key: `k${ n }`, number: n + 1, text: `Claim ${ n }.` }, item ) ) );
	return panel;
}

const row = ( level ) => document.querySelector( `.side-hint[data-side-level="${ level }"]` );
const badge = ( level ) => row( level ).querySelector( '.side-verdict' );
const colours = ( node ) => {
	const computed = getComputedStyle( node );
	return [ computed.color, computed.backgroundColor, computed.borderStyle ].join( ' ' );
};

describe( 'the hints panel', () => {
	it( 'shows each of the four levels with its own label and its own style', () => {
		panelWith( LEVELS.map( ( level ) => ( { result: result( level, level === 'cannot_check' ?
			{ level_reason: 'paywall: only a teaser was served', score: null, evidence: [] } : {} ) } ) ) );
		expect( LEVELS.map( ( level ) => badge( level ).textContent ) ).toEqual(
			[ 'Supported', 'Partially supported', 'Not supported', 'Could not be checked' ] );
		expect( LEVELS.map( ( level ) => badge( level ).className ) ).toEqual(
			LEVELS.map( ( level ) => `side-verdict side-verdict--${ level }` ) );
		const styles = LEVELS.map( ( level ) => colours( badge( level ) ) );
		expect( new Set( styles ).size ).toBe( 4 );
		expect( getComputedStyle( badge( 'not_supported' ) ).color ).toBe( 'rgb(215, 51, 51)' );
		expect( getComputedStyle( badge( 'supported' ) ).color ).toBe( 'rgb(20, 134, 109)' );
		/* Could not be checked is grey and dashed: never a failure's red, nor a verdict's fill. */
		expect( getComputedStyle( badge( 'cannot_check' ) ).color ).toBe( 'rgb(84, 89, 93)' );
		expect( getComputedStyle( badge( 'cannot_check' ) ).borderStyle ).toBe( 'dashed' );
		expect( colours( badge( 'partially_supported' ) ) ).not.toEqual( colours( badge( 'not_supported' ) ) );
	} );

	it( 'names the words a partially supported claim has that the source does not back, as plain text', () => {
		panelWith( [ { result: result( 'partially_supported',
			{ unsupported: [ 'Mexico City', '<img src=x onerror=alert(1)>', '', 7 ], suggestions: [ SUGGESTION ] } ) } ] );
		const note = row( 'partially_supported' ).querySelector( '.side-hint__unsupported' );
		expect( note.querySelector( '.side-hint__unsupported-label' ).textContent ).toBe( 'Not backed by the source:' );
		expect( [ ...note.querySelectorAll( 'mark.side-hint__word' ) ].map( ( m ) => m.textContent ) ).toEqual(
			[ 'Mexico City', '<img src=x onerror=alert(1)>' ] );
		expect( note.querySelector( 'img' ) ).toBeNull();
		expect( row( 'partially_supported' ).textContent ).toContain( 'Source says: “Evidence for partially_supported.”' );
	} );

	it( 'names no words for a partially supported claim the service gave none for, nor at other levels', () => {
		panelWith( [ { result: result( 'partially_supported' ) },
			{ result: result( 'not_supported', { unsupported: [ 'everything' ] } ) },
			{ result: result( 'supported', { unsupported: [ 'nothing' ] } ) } ] );
		expect( document.querySelectorAll( '.side-hint__unsupported' ) ).toHaveLength( 0 );
	} );

	it( 'offers the better source to Insert for partially and not supported citations, not supported ones', () => {
		const inserts = [];
		panelWith( [ { result: result( 'supported', { suggestions: [ SUGGESTION ] } ) },
			{ result: result( 'partially_supported', { suggestions: [ SUGGESTION ] } ) },
			{ result: result( 'not_supported', { suggestions: [ SUGGESTION ] } ) } ], inserts );
		expect( row( 'supported' ).querySelector( '.side-insert' ) ).toBeNull();
		row( 'partially_supported' ).querySelector( '.side-insert' ).click();
		row( 'not_supported' ).querySelector( '.side-insert' ).click();
		expect( inserts ).toEqual( [ [ 'k1', SUGGESTION.url ], [ 'k2', SUGGESTION.url ] ] );
	} );

	it( 'offers the article\'s own source as a reuse, saying the article already cites it', () => {
		const inserts = [];
		const own = { url: 'https://example.org/good', title: 'Good', score: 0.9, origin: 'article', reuse_ref: 'g',
			cite: '<ref name="g" />', evidence: { text: 'Alsea was founded in 1997.' } };
		panelWith( [ { result: result( 'not_supported', { suggestions: [ own, SUGGESTION ] } ) } ], inserts );
		const [ first, second ] = row( 'not_supported' ).querySelectorAll( '.side-suggestion' );
		expect( first.querySelector( '.side-insert' ).textContent ).toBe( 'Reuse this citation' );
		expect( first.querySelector( '.side-suggestion__origin' ).textContent ).toBe(
			'This article already cites a source that supports this.' );
		expect( second.querySelector( '.side-insert' ).textContent ).toBe( 'Insert citation' );
		expect( second.querySelector( '.side-suggestion__origin' ) ).toBeNull();
		first.querySelector( '.side-insert' ).click();
		expect( inserts ).toEqual( [ [ 'k0', own.url ] ] );
	} );

	it( 'links a better source only at an http(s) URL, showing any other as text', () => {
		// eslint-disable-next-line no-script-url -- the hostile URL this test feeds the panel
		const hostile = [ 'javascript:alert(document.cookie)', ' JavaScript:alert(1)', 'data:text/html,<script>x</script>',
			'vbscript:msgbox(1)', '//evil.example/x', '' ];
		panelWith( [ { result: result( 'not_supported', { suggestions: [ SUGGESTION,
			{ url: 'HTTP://Example.org/ok', title: 'Upper case scheme' },
			...hostile.map( ( url, n ) => ( { url, title: `Hostile ${ n }`, cite: '{{cite web}}' } ) ) ] } ) } ] );
		const links = [ ...row( 'not_supported' ).querySelectorAll( '.side-suggestion__link' ) ];
		expect( links.map( ( node ) => node.textContent ) ).toEqual(
			[ 'Alsea history', 'Upper case scheme', ...hostile.map( ( url, n ) => `Hostile ${ n }` ) ] );
		expect( links.slice( 0, 2 ).map( ( node ) => node.getAttribute( 'href' ) ) ).toEqual(
			[ SUGGESTION.url, 'HTTP://Example.org/ok' ] );
		links.slice( 2 ).forEach( ( node ) => {
			expect( node.tagName ).toBe( 'SPAN' );
			expect( node.hasAttribute( 'href' ) ).toBe( false );
		} );
		expect( [ ...document.querySelectorAll( '[href]' ) ].map( ( node ) => node.getAttribute( 'href' ) )
			.filter( ( href ) => !/^https?:\/\//i.test( href ) ) ).toEqual( [] );
	} );

	it( 'shows the dashboard link for an http(s) URL only', () => {
		const panel = panelWith( [] );
		const dashboard = document.querySelector( '.side-panel__dashboard' );
		panel.setDashboard( 'https://side.example/dashboard/pages/enwiki/Alsea' );
		expect( dashboard.hidden ).toBe( false );
		expect( dashboard.getAttribute( 'href' ) ).toBe( 'https://side.example/dashboard/pages/enwiki/Alsea' );
		// eslint-disable-next-line no-script-url -- the hostile URL this test feeds the panel
		[ 'javascript:alert(1)', 'data:text/html,x', '/relative', null ].forEach( ( url ) => {
			panel.setDashboard( url );
			expect( { url, hidden: dashboard.hidden, href: dashboard.getAttribute( 'href' ) } )
				.toEqual( { url, hidden: true, href: null } );
		} );
	} );

	it( 'says a citation could not be checked with the service\'s reason, never as a failure', () => {
		panelWith( [ { result: result( 'cannot_check', { level_reason: 'soft 404: the page says "not found"',
			source_error: 'an older reason', score: null, evidence: [], flagged: false } ) } ] );
		const unchecked = row( 'cannot_check' );
		expect( badge( 'cannot_check' ).textContent ).toBe( 'Could not be checked' );
		expect( unchecked.querySelector( '.side-hint__reason' ).textContent ).toBe(
			'Reason: soft 404: the page says "not found"' );
		expect( unchecked.querySelector( '.side-hint__evidence, .side-hint__unsupported, [role="alert"], .cdx-message' ) )
			.toBeNull();
		expect( unchecked.textContent ).not.toMatch( /not supported|fails/i );
	} );

	it( 'falls back to the source error for a result that names no level reason', () => {
		panelWith( [ { result: result( 'cannot_check', { source_error: 'HTTP 503 fetching https://example.org/a',
			score: null, evidence: [] } ) } ] );
		expect( row( 'cannot_check' ).querySelector( '.side-hint__reason' ).textContent ).toBe(
			'Reason: HTTP 503 fetching https://example.org/a' );
	} );

	it( 'shows a level it does not know, or an answer without one, as not checked', () => {
		panelWith( [ { result: result( 'fails' ) }, { result: { client_key: 'x', verdict: 'supported' } },
			{ result: null, pending: true } ] );
		expect( [ ...document.querySelectorAll( '.side-hint' ) ].map( ( r ) => r.getAttribute( 'data-side-level' ) ) )
			.toEqual( [ 'none', 'none', 'pending' ] );
		expect( document.querySelector( '.side-verdict' ).textContent ).toBe( 'Not checked yet' );
	} );
} );

describe( 'the messages', () => {
	const used = new Set();
	fs.readdirSync( SRC ).filter( ( name ) => name.endsWith( '.js' ) ).forEach( ( name ) => {
		/* msg( 'key' ..., and the keys in the message maps and ternaries ( : 'key', ? 'key' ). */
		const source = fs.readFileSync( path.join( SRC, name ), 'utf8' );
		for ( const match of source.matchAll( /(?:msg\(\s*|[:?]\s*)'(side-[a-z-]*[a-z])'/g ) ) {
			used.add( match[ 1 ] );
		}
	} );
	const keys = ( json ) => Object.keys( json ).filter( ( key ) => key !== '@metadata' );

	it( 'has every message the gadget names, in every language file, documented', () => {
		const files = fs.readdirSync( path.join( __dirname, '..', 'i18n' ) ).filter( ( name ) => name.endsWith( '.json' ) );
		expect( [ 'side-verdict-partially-supported', 'side-verdict-not-supported', 'side-unsupported',
			'side-error-csp', 'side-inserted' ].filter( ( key ) => !used.has( key ) ) ).toEqual( [] );
		files.forEach( ( name ) => {
			const json = JSON.parse( fs.readFileSync( path.join( __dirname, '..', 'i18n', name ), 'utf8' ) );
			const missing = [ ...used ].filter( ( key ) => !( key in json ) );
			expect( { name, missing } ).toEqual( { name, missing: [] } );
		} );
		expect( keys( documentation ).sort() ).toEqual( keys( messages ).sort() );
	} );

	it( 'has exactly the English keys in every translation and in the documentation', () => {
		fs.readdirSync( path.join( __dirname, '..', 'i18n' ) ).filter( ( name ) => name.endsWith( '.json' ) ).forEach( ( name ) => {
			const json = JSON.parse( fs.readFileSync( path.join( __dirname, '..', 'i18n', name ), 'utf8' ) );
			expect( { name, keys: keys( json ).sort() } ).toEqual( { name, keys: keys( messages ).sort() } );
			expect( json[ '@metadata' ].authors.length ).toBeGreaterThan( 0 );
		} );
	} );

	it( 'keeps no message of the older verdict words', () => {
		expect( keys( messages ).filter( ( key ) => /unclear|fails/.test( key ) ) ).toEqual( [] );
		expect( Object.values( messages ).join( '\n' ) ).not.toMatch( /SUPPORTS|REFUTES|NOT ENOUGH INFO/ );
	} );
} );

describe( 'a verdict Side is unsure of', () => {
	it( 'reads as Side\'s guess, quietly, while a flag stands out', () => {
		panelWith( [
			{ result: result( 'not_supported' ) },
			{ result: result( 'partially_supported', { flagged: false, unsure: true } ) },
			{ result: result( 'not_supported', { flagged: false, unsure: true } ) }
		] );
		const [ flag, guess, guessNot ] = document.querySelectorAll( '.side-hint' );
		expect( flag.querySelector( '.side-verdict' ).textContent ).toBe( 'Not supported' );
		expect( flag.classList.contains( 'side-hint--flagged' ) ).toBe( true );
		expect( flag.dataset.sideUnsure ).toBe( 'false' );
		expect( getComputedStyle( flag ).borderLeftStyle ).toBe( 'solid' );

		expect( guess.querySelector( '.side-verdict' ).textContent ).toBe( 'Probably partially supported; Side is unsure' );
		expect( guessNot.querySelector( '.side-verdict' ).textContent ).toBe( 'Probably not supported; Side is unsure' );
		for ( const hint of [ guess, guessNot ] ) {
			const label = hint.querySelector( '.side-verdict' );
			expect( hint.dataset.sideUnsure ).toBe( 'true' );
			expect( hint.classList.contains( 'side-hint--flagged' ) ).toBe( false );
			expect( label.className ).toBe( 'side-verdict side-verdict--unsure' );
			/* quiet: grey, not bold, dotted; never the flag's red */
			expect( getComputedStyle( label ).color ).toBe( 'rgb(84, 89, 93)' );
			expect( getComputedStyle( label ).fontWeight ).toBe( 'normal' );
			expect( getComputedStyle( label ).borderStyle ).toBe( 'dotted' );
		}
		expect( colours( guess.querySelector( '.side-verdict' ) ) )
			.not.toEqual( colours( flag.querySelector( '.side-verdict' ) ) );
	} );

	it( 'keeps its level, its evidence and its better sources', () => {
		panelWith( [ { result: result( 'partially_supported', { flagged: false, unsure: true,
			unsupported: [ 'in 1997' ], suggestions: [ SUGGESTION ] } ) } ] );
		const guess = row( 'partially_supported' );
		expect( guess.querySelector( '.side-hint__word' ).textContent ).toBe( 'in 1997' );
		expect( guess.querySelector( '.side-hint__evidence' ).textContent ).toContain( 'Evidence for partially_supported.' );
		expect( guess.querySelectorAll( '.side-hint__suggestions li' ) ).toHaveLength( 1 );
	} );

	it( 'is never claimed for a flag or for a level that needs no review', () => {
		panelWith( [ { result: result( 'supported', { unsure: true } ) },
			{ result: result( 'not_supported', { flagged: true, unsure: true } ) },
			{ result: result( 'cannot_check', { unsure: true, level_reason: 'paywall', score: null } ) } ] );
		expect( [ ...document.querySelectorAll( '.side-hint' ) ].map( ( r ) => r.dataset.sideUnsure ) )
			.toEqual( [ 'false', 'false', 'false' ] );
		expect( badge( 'supported' ).textContent ).toBe( 'Supported' );
		expect( badge( 'not_supported' ).textContent ).toBe( 'Not supported' );
	} );

	it( 'has its messages in every language, documented', () => {
		for ( const key of [ 'side-verdict-unsure-partially-supported', 'side-verdict-unsure-not-supported' ] ) {
			expect( messages[ key ] ).toMatch( /Side is unsure$/ );
			expect( documentation[ key ] ).toBeTruthy();
			expect( require( '../i18n/de.json' )[ key ] ).toBeTruthy();
		}
	} );
} );

describe( 'the severity of a weak citation', () => {
	it( 'shows beside the level what is missing and how much it matters', () => {
		panelWith( [
			{ result: result( 'not_supported', { severity: 'high', missing: 'number' } ) },
			{ result: result( 'partially_supported', { severity: 'low', missing: 'wording', flagged: false, unsure: true } ) }
		] );
		const high = row( 'not_supported' ).querySelector( '.side-severity' );
		expect( high.textContent ).toBe( 'high: a number is not backed' );
		expect( high.dataset.sideSeverity ).toBe( 'high' );
		expect( high.previousElementSibling ).toBe( badge( 'not_supported' ) );
		expect( high.title ).toBe( msg( 'side-severity-title' ) );
		const low = row( 'partially_supported' ).querySelector( '.side-severity' );
		expect( low.textContent ).toBe( 'low: wording only' );
		/* a missing fact stands out in the flag's red; wording only is quiet grey */
		expect( getComputedStyle( high ).color ).toBe( 'rgb(215, 51, 51)' );
		expect( getComputedStyle( low ).color ).toBe( 'rgb(84, 89, 93)' );
		expect( getComputedStyle( low ).borderStyle ).toBe( 'dotted' );
	} );

	it( 'names a gap of wording in an article about a living person as high', () => {
		panelWith( [ { result: result( 'partially_supported', { severity: 'high', missing: 'wording' } ) } ] );
		expect( row( 'partially_supported' ).querySelector( '.side-severity' ).textContent )
			.toBe( 'high: wording, in an article about a living person' );
	} );

	it( 'is shown for no other level and for no value it does not know', () => {
		panelWith( [
			{ result: result( 'supported', { severity: 'high', missing: 'date' } ) },
			{ result: result( 'cannot_check', { severity: 'high', missing: 'date', level_reason: 'paywall', score: null } ) },
			{ result: result( 'not_supported', { severity: 'urgent', missing: 'date' } ) },
			{ result: result( 'partially_supported', { severity: null, missing: null } ) }
		] );
		expect( document.querySelectorAll( '.side-severity' ) ).toHaveLength( 0 );
		panelWith( [ { result: result( 'not_supported', { severity: 'high', missing: '<b>odd</b>' } ) } ] );
		expect( row( 'not_supported' ).querySelector( '.side-severity' ).textContent ).toBe( 'high' );
	} );

	it( 'has its messages in every language, documented', () => {
		const german = require( '../i18n/de.json' );
		for ( const key of [ 'side-severity', 'side-severity-high', 'side-severity-low', 'side-severity-title',
			'side-missing-number', 'side-missing-date', 'side-missing-name', 'side-missing-quotation',
			'side-missing-wording', 'side-missing-wording-living' ] ) {
			expect( messages[ key ] ).toBeTruthy();
			expect( documentation[ key ] ).toBeTruthy();
			expect( german[ key ] ).toBeTruthy();
		}
	} );
} );
