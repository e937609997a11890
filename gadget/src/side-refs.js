/**
 * Find the citation uses in wikitext: each <ref>, the claim sentence before it, the words
 * before that, the section path and the source it names. Mirrors side.extract.wikitext.extract_claims
 * for <ref> uses, in one left-to-right pass:
 *
 * - comments and nowiki/pre/math/... blocks are never read;
 * - the claim is the last sentence of the paragraph before the ref; inside a template
 *   parameter (an infobox value, an {{efn}}) or a file caption, of that parameter only;
 * - refs in <references>...</references> and {{reflist|refs=...}} define, they are not uses;
 * - <ref name="x" /> uses the first body given for "x" anywhere on the page;
 * - the URL and title come from side-citation.js.
 *
 * Short citations ({{sfn}}) and {{#tag:ref}} are not returned: they name no URL to check.
 * Each use keeps `start`/`end`, the offsets of its <ref ...>...</ref>, for the editor.
 */
'use strict';

var wikitext = require( './side-wikitext.js' );
var citations = require( './side-citation.js' );

var LIST_TEMPLATES = [ 'reflist', 'references', 'notelist', 'notes', 'refbegin' ];
var TOKEN = /<ref\b([^>]*?)\/>|<ref\b([^>]*)>|<references\b[^>]*?\/>|<references\b[^>]*>|\{\{|\}\}|\[\[|\]\]|\||\n/gi;
var REF_CLOSE = /<\/ref\s*>/gi;
var REFERENCES_CLOSE = /<\/references\s*>/gi;
var DEFINED_REF = /<ref\b([^>]*?)\/>|<ref\b([^>]*)>([\s\S]*?)<\/ref\s*>/gi;
var HEADING = /^(=+)(.*[^=].*?)(=+)[ \t]*$/;
var LIST_LINE = /^[*#:;]+/;
var PARAM_NAME = /^\s*[^=|{}[\]<>\n]*=/;
/* Words of context before a ref, and how far back to look for them. */
var CONTEXT_WORDS = 100;
var CONTEXT_CHARS = 4000;

function plain( text ) {
	return wikitext.cleanText( wikitext.plainText( text ) );
}

function frame( kind, start ) {
	return { kind: kind, start: start, paraStart: start + 2, paramStart: start + 2, firstPipe: -1 };
}

/**
 * One pass over the masked text, collecting uses and list-defined refs.
 *
 * @param {string} text The wikitext
 * @param {string} masked The same text with comments and verbatim blocks blanked
 * @param {Object.<number,boolean>} ignored Offsets of "{{" that never close (literal text)
 * @return {Object} uses, definitions and the offsets of unclosed "{{"
 */
function scan( text, masked, ignored ) {
	var root = { kind: 'root', start: 0, paraStart: 0, paramStart: 0 },
		stack = [ root ], uses = [], definitions = [], headings = [],
		state = { section: [], sectionStart: 0, breaks: [ 0 ], previousList: false },
		match, token, position, top;

	function innermost() {
		return stack[ stack.length - 1 ];
	}

	function paragraphBreak( at ) {
		innermost().paraStart = at;
		if ( innermost() === root ) {
			state.breaks.push( at );
		}
	}

	function line( start ) {
		var end = masked.indexOf( '\n', start ), content, list, heading, level;
		content = masked.slice( start, end === -1 ? masked.length : end );
		list = LIST_LINE.exec( content );
		if ( /^\s*$/.test( content ) || state.previousList ) {
			paragraphBreak( start );
		}
		state.previousList = !!list;
		if ( list ) {
			paragraphBreak( start + list[ 0 ].length );
		} else if ( /^(\{\||\|\}|\|-|!)/.test( content ) ) {
			paragraphBreak( start + ( content[ 0 ] === '!' ? 1 : 2 ) );
		}
		heading = innermost() === root && HEADING.exec( content );
		if ( heading ) {
			level = Math.min( heading[ 1 ].length, heading[ 3 ].length );
			while ( headings.length && headings[ headings.length - 1 ].level >= level ) {
				headings.pop();
			}
			headings.push( { level: level, title: plain( heading[ 2 ] ) } );
			state.section = headings.map( function ( h ) {
				return h.title;
			} );
			state.sectionStart = start + content.length;
			state.breaks = [ state.sectionStart ];
			root.paraStart = state.sectionStart;
		}
	}

	/* Where the words before a ref start: the parameter, or the section (at least
	   CONTEXT_CHARS back, from a paragraph start so that no template is cut). */
	function leftStart( current, at ) {
		var start = state.sectionStart, i;
		if ( current !== root ) {
			return current.paramStart;
		}
		for ( i = 0; i < state.breaks.length && state.breaks[ i ] <= at - CONTEXT_CHARS; i++ ) {
			start = state.breaks[ i ];
		}
		return start;
	}

	function record( start, end, attributes, body ) {
		var current = innermost(), segment = masked.slice( current.paraStart, start ),
			left = masked.slice( leftStart( current, start ), start );
		if ( current.kind === 'template' ) {
			left = left.replace( PARAM_NAME, '' );
			if ( current.paraStart === current.paramStart ) {
				segment = segment.replace( PARAM_NAME, '' );
			}
		}
		uses.push( {
			start: start, end: end, body: body,
			name: citations.attribute( attributes, 'name' ),
			text: wikitext.lastSentence( plain( segment ) ),
			leftContext: wikitext.lastWords( plain( left ), CONTEXT_WORDS ),
			section: state.section.slice()
		} );
	}

	function defineAll( from, to ) {
		var found;
		DEFINED_REF.lastIndex = from;
		while ( ( found = DEFINED_REF.exec( masked ) ) !== null && found.index < to ) {
			if ( found[ 3 ] !== undefined ) {
				definitions.push( { start: found.index, name: citations.attribute( found[ 2 ], 'name' ),
					body: found[ 3 ] && text.slice( found.index + found[ 0 ].indexOf( '>' ) + 1 ).slice( 0, found[ 3 ].length ) } );
			}
		}
	}

	function closeTemplate( at ) {
		var closing = innermost(), head, name;
		while ( closing.kind === 'link' ) {
			stack.pop();
			closing = innermost();
		}
		if ( closing.kind !== 'template' ) {
			return;
		}
		stack.pop();
		head = masked.slice( closing.start + 2, closing.firstPipe === -1 ? at : closing.firstPipe );
		name = wikitext.templateName( head );
		if ( LIST_TEMPLATES.indexOf( name ) !== -1 ) {
			// Refs inside {{reflist|refs=...}} are definitions, not uses.
			uses = uses.filter( function ( use ) {
				if ( use.start > closing.start ) {
					definitions.push( { start: use.start, name: use.name, body: use.body } );
					return false;
				}
				return true;
			} );
		}
	}

	line( 0 );
	TOKEN.lastIndex = 0;
	while ( ( match = TOKEN.exec( masked ) ) !== null ) {
		token = match[ 0 ];
		position = match.index;
		top = innermost();
		if ( token[ 0 ] === '<' ) {
			if ( /^<references/i.test( token ) ) {
				if ( !/\/>$/.test( token ) ) {
					REFERENCES_CLOSE.lastIndex = position;
					match = REFERENCES_CLOSE.exec( masked );
					TOKEN.lastIndex = match ? match.index + match[ 0 ].length : masked.length;
					defineAll( position, TOKEN.lastIndex );
				}
			} else if ( match[ 1 ] !== undefined ) {
				record( position, position + token.length, match[ 1 ], null );
			} else {
				REF_CLOSE.lastIndex = position + token.length;
				match = REF_CLOSE.exec( masked );
				if ( match ) {
					record( position, match.index + match[ 0 ].length, token.slice( 4, -1 ),
						text.slice( position + token.length, match.index ) );
					TOKEN.lastIndex = match.index + match[ 0 ].length;
				}
			}
		} else if ( token === '{{' ) {
			if ( !ignored[ position ] ) {
				stack.push( frame( 'template', position ) );
			}
		} else if ( token === '}}' ) {
			closeTemplate( position );
		} else if ( token === '[[' ) {
			stack.push( frame( 'link', position ) );
		} else if ( token === ']]' ) {
			if ( top.kind === 'link' ) {
				stack.pop();
			}
		} else if ( token === '|' ) {
			top.paraStart = top.paramStart = position + 1;
			if ( top.firstPipe === -1 ) {
				top.firstPipe = position;
			}
		} else {
			while ( innermost().kind === 'link' ) {
				stack.pop();
			}
			line( position + 1 );
		}
	}
	return { uses: uses, definitions: definitions, unclosed: stack.filter( function ( f ) {
		return f.kind === 'template';
	} ).map( function ( f ) {
		return f.start;
	} ) };
}

/**
 * Every <ref> use in the wikitext, in document order.
 *
 * @param {string} text Wikitext of a page
 * @return {Array.<Object>} Uses: key, start, end, name, text (the claim), leftContext,
 *  section, and the citation's kind, template, url and title
 */
function findRefs( text ) {
	var masked = citations.maskOpaque( text ), ignored = {}, result, tries, bodies = {}, parsed = {};
	for ( tries = 0; tries < 4; tries++ ) {
		result = scan( text, masked, ignored );
		if ( !result.unclosed.length ) {
			break;
		}
		// An unclosed "{{" is literal text in MediaWiki: read the page again without it.
		result.unclosed.forEach( function ( start ) {
			ignored[ start ] = true;
		} );
	}
	result.uses.concat( result.definitions ).sort( function ( a, b ) {
		return a.start - b.start;
	} ).forEach( function ( ref ) {
		if ( ref.name && ref.body && ref.body.trim() && !bodies[ ref.name ] ) {
			bodies[ ref.name ] = ref.body;
		}
	} );
	return result.uses.map( function ( use ) {
		var body = use.body && use.body.trim() ? use.body : bodies[ use.name ] || null,
			cited;
		if ( body === null && !use.name ) {
			return null;
		}
		cited = body === null ? { kind: 'text', template: null, url: null, title: null } :
			parsed[ body ] || ( parsed[ body ] = citations.parseCitation( body ) );
		return {
			key: citations.hash( ( body === null ? 'name:' + use.name : citations.normalizeBody( body ) ) + '\u001f' + use.text ),
			start: use.start, end: use.end, name: use.name, text: use.text,
			leftContext: use.leftContext, section: use.section,
			kind: cited.kind, template: cited.template, url: cited.url, title: cited.title
		};
	} ).filter( Boolean );
}

module.exports = {
	findRefs: findRefs
};
