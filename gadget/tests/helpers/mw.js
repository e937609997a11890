'use strict';

/**
 * A small stand-in for the parts of `mw` the gadget touches: messages with $1 and
 * {{PLURAL}} (as mediawiki.jqueryMsg renders them), config, user options, storage and hooks.
 */
/**
 * @param {string} text A message
 * @param {Array} params Its $1, $2 ...
 * @return {string}
 */
function format( text, params ) {
	return text
		.replace( /\{\{PLURAL:\$(\d+)\|([^|}]*)\|([^}]*)\}\}/g, ( whole, n, one, many ) => (
			Number( params[ n - 1 ] ) === 1 ? one : many
		) )
		.replace( /\$(\d+)/g, ( whole, n ) => String( params[ n - 1 ] ) );
}

function makeMap( values = {} ) {
	const data = Object.assign( {}, values );
	return {
		get: ( key ) => ( Object.prototype.hasOwnProperty.call( data, key ) ? data[ key ] : null ),
		set: ( key, value ) => {
			data[ key ] = value;
		}
	};
}

function createMw( { config = {}, options = {}, anonymous = false } = {} ) {
	const messages = {};
	const hooks = {};
	const stored = {};
	const saved = [];
	const mw = {
		messages: {
			set: ( values ) => Object.assign( messages, values ),
			get: ( key ) => messages[ key ]
		},
		message: ( key, ...params ) => ( {
			text: () => ( messages[ key ] === undefined ? `⧼${ key }⧽` : format( messages[ key ], params ) )
		} ),
		config: makeMap( config ),
		user: {
			isAnon: () => anonymous,
			isNamed: () => !anonymous,
			options: makeMap( options )
		},
		storage: {
			get: ( key ) => ( key in stored ? stored[ key ] : null ),
			set: ( key, value ) => {
				stored[ key ] = String( value );
				return true;
			}
		},
		hook: ( name ) => {
			hooks[ name ] = hooks[ name ] || [];
			return {
				add: ( fn ) => hooks[ name ].push( fn ),
				fire: ( ...args ) => hooks[ name ].forEach( ( fn ) => fn( ...args ) )
			};
		},
		log: { error: jest.fn() },
		loader: {
			getState: () => null,
			using: () => Promise.resolve()
		},
		Api: function () {
			this.saveOption = ( name, value ) => {
				saved.push( [ name, value ] );
				return Promise.resolve();
			};
		},
		savedOptions: saved,
		storedValues: stored
	};
	return mw;
}

module.exports = { createMw, format };
