'use strict';

/**
 * side-messages.json as gadget/deploy.py builds it: every language of i18n/ but the
 * documentation (qqq), by code, without @metadata.
 */
const fs = require( 'fs' );
const path = require( 'path' );

const dir = path.join( __dirname, '..', '..', 'i18n' );
const messages = {};
fs.readdirSync( dir ).filter( ( name ) => name.endsWith( '.json' ) && name !== 'qqq.json' ).forEach( ( name ) => {
	const json = JSON.parse( fs.readFileSync( path.join( dir, name ), 'utf8' ) );
	delete json[ '@metadata' ];
	messages[ name.replace( /\.json$/, '' ) ] = json;
} );

module.exports = messages;
