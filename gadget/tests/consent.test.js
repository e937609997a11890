'use strict';

const { createConsent, OPTION } = require( '../src/side-consent.js' );
const { createMw } = require( './helpers/mw.js' );

function consentFor( mw ) {
	return createConsent( { user: mw.user, storage: mw.storage, api: () => new mw.Api() } );
}

describe( 'consent', () => {
	it( 'is unknown until the user answers, then remembered in the user option and the browser', () => {
		const mw = createMw();
		const consent = consentFor( mw );
		expect( consent.state() ).toBe( 'unknown' );
		consent.set( 'granted' );
		expect( consent.state() ).toBe( 'granted' );
		expect( mw.user.options.get( OPTION ) ).toBe( 'granted' );
		expect( mw.savedOptions ).toEqual( [ [ 'userjs-side-consent', 'granted' ] ] );
		expect( mw.storedValues[ 'side-consent' ] ).toBe( 'granted' );
	} );

	it( 'reads an answer saved from another browser', () => {
		const mw = createMw( { options: { [ OPTION ]: 'declined' } } );
		expect( consentFor( mw ).state() ).toBe( 'declined' );
	} );

	it( 'keeps an anonymous editor\'s answer in the browser only', () => {
		const mw = createMw( { anonymous: true } );
		const consent = consentFor( mw );
		consent.set( 'declined' );
		expect( consent.state() ).toBe( 'declined' );
		expect( mw.savedOptions ).toEqual( [] );
		expect( mw.user.options.get( OPTION ) ).toBeNull();
	} );

	it( 'ignores values it did not write', () => {
		const mw = createMw( { options: { [ OPTION ]: 'maybe' } } );
		expect( consentFor( mw ).state() ).toBe( 'unknown' );
	} );
} );
