/**
 * The user's answer to "may Side send your citations to its service?", asked once.
 *
 * A logged-in user's answer is a hidden user option (userjs-side-consent, saved through the
 * Action API, so it follows them across browsers); it is also kept in the browser's storage,
 * which is all an anonymous editor has. Nothing is sent to the service before "granted".
 */
'use strict';

var OPTION = 'userjs-side-consent';
var STORAGE_KEY = 'side-consent';
var STATES = [ 'granted', 'declined' ];

/**
 * @param {Object} options
 * @param {Object} options.user mw.user
 * @param {Object} options.storage mw.storage
 * @param {Function} [options.api] Returns an mw.Api (called only to save a logged-in answer)
 * @return {Object} state() and set( state )
 */
function createConsent( options ) {
	var user = options.user, storage = options.storage;

	function isNamed() {
		return typeof user.isNamed === 'function' ? user.isNamed() : !user.isAnon();
	}

	/**
	 * @return {string} "granted", "declined" or "unknown"
	 */
	function state() {
		var value = ( isNamed() && user.options.get( OPTION ) ) || storage.get( STORAGE_KEY );
		return STATES.indexOf( value ) === -1 ? 'unknown' : value;
	}

	/**
	 * Remember an answer; saving the user option is best effort (the browser keeps it too).
	 *
	 * @param {string} value "granted" or "declined"
	 */
	function set( value ) {
		storage.set( STORAGE_KEY, value );
		if ( isNamed() ) {
			user.options.set( OPTION, value );
			if ( options.api ) {
				options.api().saveOption( OPTION, value ).then( null, function () {} );
			}
		}
	}

	return { state: state, set: set };
}

module.exports = {
	createConsent: createConsent,
	OPTION: OPTION
};
