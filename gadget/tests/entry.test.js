'use strict';

/**
 * The gadget as ResourceLoader runs it: side.js with a global mw and jQuery, started by the
 * "wikipage.editform" hook on an edit form.
 */
const $ = require( 'jquery' );
const { createMw } = require( './helpers/mw.js' );
const { linearOffset, veSourceEditor } = require( '../src/side-editors.js' );

/* The parts of MediaWiki's jquery.textSelection plugin the gadget uses, on a plain textarea. */
function installTextSelection() {
	$.fn.textSelection = function ( command, options ) {
		const textarea = this[ 0 ];
		switch ( command ) {
			case 'getContents':
				return textarea.value;
			case 'setSelection':
				textarea.setSelectionRange( options.start, options.end );
				return this;
			case 'replaceSelection':
				textarea.setRangeText( options, textarea.selectionStart, textarea.selectionEnd, 'end' );
				return this;
			default:
				return this;
		}
	};
}

const TEXT = 'Alsea runs Starbucks in Mexico.<ref>[https://example.org/a Source A]</ref>';

function loadGadget( { config = {}, pageConfig = {} } = {} ) {
	document.body.innerHTML = '<form id="editform"><textarea id="wpTextbox1"></textarea>' +
		'<div class="editOptions">summary</div></form>';
	document.getElementById( 'wpTextbox1' ).value = TEXT;
	const mw = createMw( { config: Object.assign( { wgPageContentModel: 'wikitext', wgNamespaceNumber: 0,
		wgDBname: 'testwiki', wgPageName: 'Alsea_(company)', wgCurRevisionId: 7 }, pageConfig ) } );
	global.mw = mw;
	// eslint-disable-next-line no-jquery/variable-pattern -- the jQuery global itself
	global.$ = $;
	window.sideGadgetConfig = config;
	jest.isolateModules( () => {
		require( '../src/side.js' );
	} );
	return mw;
}

describe( 'side.js', () => {
	beforeAll( installTextSelection );

	afterEach( () => {
		delete global.mw;
		delete window.sideGadgetConfig;
	} );

	it( 'mounts the panel above the summary box and asks for consent', () => {
		const mw = loadGadget( { config: { apiUrl: 'https://side.example.org' } } );
		let ready = null;
		mw.hook( 'side.ready' ).add( ( controller ) => {
			ready = controller;
		} );
		mw.hook( 'wikipage.editform' ).fire( $( '#editform' ) );
		const panel = document.querySelector( '.side-panel' );
		expect( panel.nextElementSibling.className ).toBe( 'editOptions' );
		expect( panel.textContent ).toContain( 'Source check (Side)' );
		expect( panel.querySelector( '.side-consent-allow' ).textContent ).toBe( 'Allow and check citations' );
		expect( panel.textContent ).toContain( 'https://side.example.org' );
		expect( ready ).not.toBeNull();
		// The hook fires again after a live preview: still one panel.
		mw.hook( 'wikipage.editform' ).fire( $( '#editform' ) );
		expect( document.querySelectorAll( '.side-panel' ) ).toHaveLength( 1 );
	} );

	it( 'speaks the user\'s language, English where a message is missing', () => {
		const mw = loadGadget( { config: { apiUrl: 'https://side.example.org' }, pageConfig: { wgUserLanguage: 'de' } } );
		mw.hook( 'wikipage.editform' ).fire( $( '#editform' ) );
		const panel = document.querySelector( '.side-panel' );
		expect( panel.textContent ).toContain( 'Belegprüfung (Side)' );
		expect( panel.querySelector( '.side-consent-allow' ).textContent ).toBe( 'Erlauben und Belege prüfen' );
		expect( mw.message( 'side-verdict-not-supported' ).text() ).toBe( 'Nicht gestützt' );
		expect( mw.message( 'side-status-checking', 1 ).text() ).toBe( 'Ein Beleg wird geprüft …' );
		expect( mw.message( 'side-status-checking', 3 ).text() ).toBe( '3 Belege werden geprüft …' );
		// A regional variant gets its base language; a language Side has no messages in, English.
		expect( loadGadget( { pageConfig: { wgUserLanguage: 'de-at' } } ).message( 'side-title' ).text() )
			.toBe( 'Belegprüfung (Side)' );
		expect( loadGadget( { pageConfig: { wgUserLanguage: 'fr' } } ).message( 'side-title' ).text() )
			.toBe( 'Source check (Side)' );
	} );

	it( 'stays out of pages that are not wikitext in a checked namespace', () => {
		let mw = loadGadget( { pageConfig: { wgPageContentModel: 'javascript' } } );
		mw.hook( 'wikipage.editform' ).fire( $( '#editform' ) );
		expect( document.querySelector( '.side-panel' ) ).toBeNull();
		mw = loadGadget( { pageConfig: { wgNamespaceNumber: 10 } } );
		mw.hook( 'wikipage.editform' ).fire( $( '#editform' ) );
		expect( document.querySelector( '.side-panel' ) ).toBeNull();
	} );

	it( 'logs its own errors instead of breaking the editor', () => {
		const mw = loadGadget();
		const broken = { find: () => {
			throw new Error( 'boom' );
		} };
		expect( () => mw.hook( 'wikipage.editform' ).fire( broken ) ).not.toThrow();
		expect( mw.log.error ).toHaveBeenCalledWith( expect.objectContaining( { message: 'boom' } ) );
	} );

	it( 'says in one line that no backend is configured, and asks nobody', () => {
		const mw = loadGadget( { config: { apiUrl: '', liftwingUrl: '' } } );
		let ready = null;
		mw.hook( 'side.ready' ).add( ( controller ) => {
			ready = controller;
		} );
		mw.hook( 'wikipage.editform' ).fire( $( '#editform' ) );
		const panel = document.querySelector( '.side-panel' );
		expect( panel.querySelector( '.side-panel__notice' ).textContent ).toBe(
			'Side is not set up on this wiki: no backend address in MediaWiki:Gadget-side-config.json.' );
		expect( panel.querySelector( '.side-consent-allow' ) ).toBeNull();
		expect( ready ).toBeNull();
	} );

	it( 'inserts into the textarea through jquery.textSelection', () => {
		const mw = loadGadget( { config: { apiUrl: 'https://side.example.org' } } );
		let controller;
		mw.hook( 'side.ready' ).add( ( ready ) => {
			controller = ready;
		} );
		mw.hook( 'wikipage.editform' ).fire( $( '#editform' ) );
		const key = require( '../src/side-refs.js' ).findRefs( TEXT )[ 0 ].key;
		controller.insert( key, { url: 'https://b.example.org', cite: '{{cite web |url=https://b.example.org}}' } );
		expect( document.getElementById( 'wpTextbox1' ).value ).toBe( TEXT + '<ref>{{cite web |url=https://b.example.org}}</ref>' );
	} );
} );

describe( 'the 2017 wikitext editor adapter', () => {
	it( 'maps text offsets to the linear model (one paragraph per line)', () => {
		const text = 'ab\ncd\n\nef';
		expect( linearOffset( text, 0 ) ).toBe( 1 );
		expect( linearOffset( text, 2 ) ).toBe( 3 );
		expect( linearOffset( text, 3 ) ).toBe( 5 );
		expect( linearOffset( text, 8 ) ).toBe( 12 );
	} );

	it( 'inserts through a linear fragment', () => {
		const calls = [];
		function Range( from, to ) {
			this.from = from;
			this.to = to === undefined ? from : to;
		}
		const surface = {
			getDom: () => 'Line one.\nClaim.<ref>x</ref>',
			getModel: () => ( {
				getLinearFragment: ( range ) => ( { insertContent: ( text ) => calls.push( [ range.from, text ] ) } ),
				on: () => {}
			} ),
			$element: $( '<div>' )
		};
		veSourceEditor( surface, Range ).insert( 27, '<ref>y</ref>' );
		expect( calls ).toEqual( [ [ 29, '<ref>y</ref>' ] ] );
	} );
} );
