/**
 * Put a suggested source into the wikitext.
 *
 * The new citation is inserted right after the weak citation's </ref> (or its <ref ... />),
 * and the weak one stays: removing a source is the editor's call, and the original may
 * support a part of the sentence that the suggestion does not. The citation is found again
 * by its key in the current text, so edits made since the check do not misplace it.
 */
'use strict';

var refs = require( './side-refs.js' );

function pad( n ) {
	return ( n < 10 ? '0' : '' ) + n;
}

/**
 * Today as YYYY-MM-DD (UTC), the access-date format of Wikipedia's citation templates.
 *
 * @param {Date} date
 * @return {string}
 */
function isoDate( date ) {
	return date.getUTCFullYear() + '-' + pad( date.getUTCMonth() + 1 ) + '-' + pad( date.getUTCDate() );
}

/* A template parameter value: "|" and "}}" would end it, brackets break CS1 titles. */
function paramValue( value ) {
	return String( value || '' ).replace( /\s+/g, ' ' ).trim()
		.replace( /\}/g, '&#125;' ).replace( /\|/g, '{{!}}' )
		.replace( /\[/g, '&#91;' ).replace( /\]/g, '&#93;' );
}

/**
 * The {{cite web}} for a suggestion: the service's own when it sent one, else built here.
 *
 * @param {Object} suggestion A suggestion from the API (url, title, cite)
 * @param {Date} [today]
 * @return {string}
 */
function citeWeb( suggestion, today ) {
	var cite = String( suggestion.cite || '' ).trim();
	if ( /^\{\{[\s\S]*\}\}$/.test( cite ) ) {
		return cite;
	}
	return '{{cite web |url=' + paramValue( suggestion.url ) +
		( suggestion.title ? ' |title=' + paramValue( suggestion.title ) : '' ) +
		' |access-date=' + isoDate( today || new Date() ) + '}}';
}

/**
 * Where and what to insert for a suggestion.
 *
 * @param {string} text Current wikitext
 * @param {string} key Key of the weak citation use (from side-refs.js)
 * @param {Object} suggestion
 * @param {Date} [today]
 * @return {{offset: number, text: string}|{error: string}} error is "missing" when the
 *  citation is no longer in the text, "duplicate" when the source is already cited there
 */
function planInsertion( text, key, suggestion, today ) {
	var uses = refs.findRefs( text ), i, use, following;
	for ( i = 0; i < uses.length; i++ ) {
		if ( uses[ i ].key === key ) {
			use = uses[ i ];
			break;
		}
	}
	if ( !use ) {
		return { error: 'missing' };
	}
	// The same source already cited in this group of refs (inserted before, or by hand).
	for ( following = use; following; following = uses[ ++i ] ) {
		if ( following !== use && !/^\s*$/.test( text.slice( uses[ i - 1 ].end, following.start ) ) ) {
			break;
		}
		if ( following.url && following.url === suggestion.url ) {
			return { error: 'duplicate' };
		}
	}
	return { offset: use.end, text: '<ref>' + citeWeb( suggestion, today ) + '</ref>' };
}

/**
 * Apply a plan to a string (what an editor adapter does to its own buffer).
 *
 * @param {string} text
 * @param {{offset: number, text: string}} plan
 * @return {string}
 */
function applyInsertion( text, plan ) {
	return text.slice( 0, plan.offset ) + plan.text + text.slice( plan.offset );
}

module.exports = {
	citeWeb: citeWeb,
	isoDate: isoDate,
	planInsertion: planInsertion,
	applyInsertion: applyInsertion
};
