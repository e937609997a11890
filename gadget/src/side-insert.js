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

/* What a value must not hold as it is (side/extract/citeweb.py escapes the same): "|" and "}}"
 * would end the parameter or the template, "{{" and "[[" start markup, "<ref>"/"</ref>" would nest
 * or close the reference, and three tildes are a signature on save (written
 * "~{3}" here: a wiki signs that run on this page too). URLs are percent-encoded as CS1 asks. */
var VALUE_ESCAPES = { '|': '{{!}}', '{': '&#123;', '}': '&#125;', '[': '&#91;', ']': '&#93;', '<': '&lt;',
	'>': '&gt;' };
var URL_ESCAPES = { ' ': '%20', '"': '%22', '\'': '%27', '<': '%3C', '>': '%3E', '[': '%5B', ']': '%5D',
	'{': '%7B', '|': '%7C', '}': '%7D' };

function escapeWith( value, pattern, table, tilde ) {
	return String( value || '' ).replace( /\s+/g, ' ' ).trim()
		.replace( pattern, function ( c ) {
			return table[ c ];
		} )
		.replace( /~{3,}/g, function ( run ) {
			return run.replace( /~/g, tilde );
		} );
}

/* Plain text as a template parameter value that wikitext reads back as that text. */
function paramValue( value ) {
	return escapeWith( value, /[|{}[\]<>]/g, VALUE_ESCAPES, '&#126;' );
}

/* A URL as a template parameter value. */
function urlValue( value ) {
	return escapeWith( value, /[ "'<>[\]{|}]/g, URL_ESCAPES, '%7E' );
}

/**
 * Whether a citation is one {{cite web}} and nothing more: no second template after it, no tag,
 * link or signature, so that inside <ref>...</ref> it stays one reference.
 *
 * @param {string} cite
 * @return {boolean}
 */
function isOneCitation( cite ) {
	var depth = 0, i, pair;
	if ( !/^\{\{\s*cite web\s*\|/i.test( cite ) || /[<>]|\[\[|\]\]|~{3}/.test( cite ) ) {
		return false;
	}
	for ( i = 0; i < cite.length - 1; i++ ) {
		pair = cite.slice( i, i + 2 );
		if ( pair === '{{' || pair === '}}' ) {
			depth += pair === '{{' ? 1 : -1;
			i++;
			if ( depth === 0 && i !== cite.length - 1 ) {
				return false;
			}
		}
	}
	return depth === 0;
}

/**
 * The {{cite web}} for a suggestion: the service's own when it sent one that is a single
 * citation, else built here.
 *
 * @param {Object} suggestion A suggestion from the API (url, title, cite)
 * @param {Date} [today]
 * @return {string}
 */
function citeWeb( suggestion, today ) {
	var cite = String( suggestion.cite || '' ).trim();
	if ( isOneCitation( cite ) ) {
		return cite;
	}
	return '{{cite web |url=' + urlValue( suggestion.url ) +
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
	if ( suggestion.origin === 'article' ) {
		return planReuse( text, uses, use, suggestion );
	}
	return { offset: use.end, text: '<ref>' + citeWeb( suggestion, today ) + '</ref>' };
}

/* A ref name as an attribute value (quoted so that any name reads back the same). */
function nameAttribute( name ) {
	return 'name=' + ( name.indexOf( '"' ) === -1 ? '"' + name + '"' : '\'' + name + '\'' );
}

/**
 * Reuse one of the article's own sources: <ref name="X" /> after the weak citation. When that
 * source's ref has no name in the text, it is given the name the service proposed (the second
 * edit, at its "<ref"); when it has one now, that name is reused.
 *
 * @param {string} text
 * @param {Object[]} uses The refs of the text (side-refs.js)
 * @param {Object} use The weak citation's use
 * @param {Object} suggestion With reuse_ref, the ref's name (or the one proposed for it)
 * @return {{offset: number, text: string, edits: Object[]}|{error: string}} edits: every
 *  insertion, the last in the text first (apply them in that order)
 */
function planReuse( text, uses, use, suggestion ) {
	var name = String( suggestion.reuse_ref || '' ), named = null, original = null, reuse, edits, i;
	for ( i = 0; i < uses.length; i++ ) {
		if ( uses[ i ] !== use && uses[ i ].url && uses[ i ].url === suggestion.url ) {
			named = named || ( uses[ i ].name ? uses[ i ] : null );
			original = original || uses[ i ];
		}
	}
	if ( named ) {
		name = named.name;
		original = null;
	} else if ( !original || text.slice( original.start, original.start + 4 ).toLowerCase() !== '<ref' ) {
		return { error: 'missing' };
	}
	if ( !name ) {
		return { error: 'missing' };
	}
	reuse = { offset: use.end, text: '<ref ' + nameAttribute( name ) + ' />' };
	edits = [ reuse ];
	if ( original ) {
		edits.push( { offset: original.start + 4, text: ' ' + nameAttribute( name ) } );
	}
	edits.sort( function ( a, b ) {
		return b.offset - a.offset;
	} );
	return { offset: reuse.offset, text: reuse.text, edits: edits };
}

/**
 * Apply a plan to a string (what an editor adapter does to its own buffer): each of its edits,
 * the last in the text first, so that the offsets of the others hold.
 *
 * @param {string} text
 * @param {{offset: number, text: string, edits: (Object[]|undefined)}} plan
 * @return {string}
 */
function applyInsertion( text, plan ) {
	( plan.edits || [ plan ] ).forEach( function ( edit ) {
		text = text.slice( 0, edit.offset ) + edit.text + text.slice( edit.offset );
	} );
	return text;
}

module.exports = {
	citeWeb: citeWeb,
	isoDate: isoDate,
	planInsertion: planInsertion,
	applyInsertion: applyInsertion
};
