'use strict';

/**
 * Real articles from the shared data folder (../shared/data beside the checkout, or
 * SIDE_DATA_DIR). Outside CI a missing folder skips the tests that need it; in CI
 * (CI=true) it is a failure, as in tests/conftest.py.
 */
const fs = require( 'fs' );
const path = require( 'path' );

const dataDir = process.env.SIDE_DATA_DIR ||
	path.resolve( __dirname, '..', '..', '..', '..', 'shared', 'data' );
const wikitextDir = path.join( dataDir, 'fixtures', 'wikitext' );
const inCi = [ '1', 'true', 'yes' ].includes( String( process.env.CI || '' ).toLowerCase() );
const available = fs.existsSync( wikitextDir );

if ( !available && inCi ) {
	throw new Error( `shared data missing: ${ wikitextDir } (set SIDE_DATA_DIR)` );
}

function readArticle( name ) {
	return fs.readFileSync( path.join( wikitextDir, name ), 'utf8' );
}

function allArticles() {
	return fs.readdirSync( wikitextDir ).filter( ( name ) => name.endsWith( '.txt' ) ).sort();
}

module.exports = {
	available,
	wikitextDir,
	readArticle,
	allArticles,
	// describe, or describe.skip (locally) when the shared data is not there
	describeWithData: available ? describe : describe.skip
};
