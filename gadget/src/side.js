/**
 * Side gadget entry point: citation verdicts and better sources next to the wikitext editor.
 *
 * Starts in the source editor (hook "wikipage.editform", WikiEditor or plain textarea) and in
 * VisualEditor (hook "ve.activationComplete": the 2017 wikitext editor, side-editors.js, and
 * visual mode, side-visual.js), on wikitext pages
 * of the configured namespaces. Configuration: side-config.json (the wiki's copy,
 * MediaWiki:Gadget-side-config.json), then mw.config "wgSideApiUrl", then
 * window.sideGadgetConfig (see gadget/README.md). Its "backend" picks whom to ask among the
 * backends it gives an address (side-api.js chooseBackend): Lift Wing on a Wikimedia wiki, whose
 * Content-Security-Policy allows nothing else, the Side service (apiUrl) elsewhere. With no
 * address at all the panel says that Side is not set up on this wiki, and nothing is sent.
 * Messages: side-messages.json holds every language's messages by code (built from i18n/ by
 * deploy.py); the user's language (wgUserLanguage) is shown, English where a message is missing.
 * Nothing here may break the editor: every callback runs guarded, errors are only logged.
 */
'use strict';

var api = require( './side-api.js' );
var consent = require( './side-consent.js' );
var controllers = require( './side-controller.js' );
var editors = require( './side-editors.js' );
var hints = require( './side-hints.js' );
var visual = require( './side-visual.js' );
var defaults = require( './side-config.json' );
var messages = require( './side-messages.json' );

var started = false;

function guarded( fn ) {
	return function () {
		try {
			return fn.apply( this, arguments );
		} catch ( error ) {
			mw.log.error( error );
		}
	};
}

function msg() {
	return mw.message.apply( mw, arguments ).text();
}

function readConfig() {
	var config = $.extend( {}, defaults );
	if ( mw.config.get( 'wgSideApiUrl' ) ) {
		config.apiUrl = mw.config.get( 'wgSideApiUrl' );
	}
	config = $.extend( config, window.sideGadgetConfig || {} );
	// Who asks, for Lift Wing's API Gateway (Api-User-Agent): the gadget and the wiki it runs on.
	config.userAgent = config.userAgent || 'Side citation gadget (' + mw.config.get( 'wgServer' ) + ')';
	return config;
}

function isSupportedPage( config ) {
	return mw.config.get( 'wgPageContentModel' ) === 'wikitext' &&
		config.namespaces.indexOf( mw.config.get( 'wgNamespaceNumber' ) ) !== -1;
}

/**
 * Start the gadget on one editor.
 *
 * @param {Object} editor See side-editors.js
 * @param {Object} config
 */
function setup( editor, config ) {
	var controller, panel, client;
	panel = hints.createPanel( {
		document: document,
		msg: msg,
		onConsent: guarded( function ( granted ) {
			controller.consentGiven( granted );
		} ),
		onInsert: guarded( function ( key, suggestion ) {
			controller.insert( key, suggestion );
		} ),
		onShow: guarded( function ( key ) {
			controller.show( key );
		} )
	} );
	client = api.createBackendClient( config, mw.config.get( 'wgServer' ), { $: $, document: document,
		setTimeout: function ( fn, ms ) {
			return setTimeout( guarded( fn ), ms );
		} } );
	if ( !client ) {
		// No backend on this wiki's configuration page: ask nobody, and say so in one line.
		editor.mount( panel.element );
		panel.notify( 'side-not-configured' );
		return;
	}
	controller = controllers.createController( {
		editor: editor, client: client, panel: panel, config: config, msg: msg,
		consent: consent.createConsent( { user: mw.user, storage: mw.storage, api: function () {
			return new mw.Api();
		} } ),
		page: { wiki: config.wiki || mw.config.get( 'wgDBname' ),
			title: mw.config.get( 'wgPageName' ).replace( /_/g, ' ' ),
			revision: mw.config.get( 'wgCurRevisionId' ) || 0 },
		setTimeout: function ( fn, ms ) {
			return setTimeout( guarded( fn ), ms );
		}
	} );
	editor.mount( panel.element );
	controller.start();
	mw.hook( 'side.ready' ).fire( controller, panel );
}

/**
 * The messages of a language: English beneath, then the base language ("de" for "de-at"),
 * then the language itself.
 *
 * @param {Object} all Messages by language code
 * @param {string} lang
 * @return {Object}
 */
function languageMessages( all, lang ) {
	var code = String( lang || 'en' ).toLowerCase();
	return $.extend( {}, all.en, all[ code.split( '-' )[ 0 ] ] || {}, all[ code ] || {} );
}

mw.messages.set( languageMessages( messages, mw.config.get( 'wgUserLanguage' ) ) );

/**
 * Run after the user's own scripts (common.js), which may set window.sideGadgetConfig.
 *
 * @param {Function} fn
 */
function afterUserScripts( fn ) {
	var state = mw.loader.getState( 'user' );
	if ( state === 'loading' || state === 'loaded' || state === 'executing' ) {
		mw.loader.using( 'user' ).then( fn, fn );
	} else {
		fn();
	}
}

mw.hook( 'wikipage.editform' ).add( guarded( function ( $form ) {
	// eslint-disable-next-line es-x/no-array-prototype-find -- jQuery#find
	var $textarea = $form.find( '#wpTextbox1' );
	if ( started || !$textarea.length ) {
		return;
	}
	started = true;
	afterUserScripts( guarded( function () {
		var config = readConfig();
		if ( isSupportedPage( config ) ) {
			setup( editors.textareaEditor( $textarea ), config );
		}
	} ) );
} ) );

mw.hook( 've.activationComplete' ).add( guarded( function () {
	var surface = window.ve && window.ve.init.target.getSurface(), mode = surface && surface.getMode();
	// Once per surface: switching modes builds a new one, and the panel of the old one goes with it.
	if ( !surface || surface.sideStarted || ( mode !== 'source' && mode !== 'visual' ) ) {
		return;
	}
	surface.sideStarted = true;
	afterUserScripts( guarded( function () {
		var config = readConfig();
		if ( isSupportedPage( config ) ) {
			setup( mode === 'source' ? editors.veSourceEditor( surface, window.ve.Range ) :
				visual.visualEditor( surface, window.ve ), config );
		}
	} ) );
} ) );
