/**
 * Plain text from wikitext, read the way side/extract/wikitext.py reads prose.
 *
 * The service extracts claims with mwparserfromhell; the gadget cannot ship a parser, so these
 * few regex passes reproduce what matters for a claim: templates dropped (a few inline ones
 * keep their text), links reduced to their label, refs, tags and bold/italic quotes removed,
 * whitespace collapsed, and the last sentence found with the same boundary rule and
 * abbreviation list. tests/test_gadget_js.py compares the result with side.extract.wikitext on real
 * articles.
 *
 * The code is ES5 on purpose: MediaWiki 1.39 validates gadget pages with an ES5 parser.
 */
'use strict';

/* Templates whose last positional parameter is prose ({{nowrap|...}}, {{lang|fr|...}}). */
var INLINE_TEMPLATES = [ 'nowrap', 'nobr', 'lang', 'small', 'transl', 'nowrap begin' ];
var FILE_NAMESPACES = [ 'file', 'image', 'media', 'datei', 'bild' ];
var SKIP_NAMESPACES = [ 'category', 'kategorie' ];
var ABBREVIATIONS = ( 'mr mrs ms dr prof st jr sr no nos vol vols pp p ed eds c ca cf vs v fig gen ' +
	'gov lt col sgt capt rev hon inc ltd co corp mt ft jan feb mar apr jun jul aug sep sept oct ' +
	'nov dec approx est op al bros dept univ' ).split( ' ' );
var ENTITIES = {
	nbsp: '\u00a0', amp: '&', lt: '<', gt: '>', quot: '"', apos: '\'', ndash: '\u2013',
	mdash: '\u2014', minus: '\u2212', hellip: '\u2026', times: '\u00d7', thinsp: '\u2009',
	ensp: '\u2002', emsp: '\u2003', shy: '\u00ad', laquo: '\u00ab', raquo: '\u00bb',
	lsquo: '\u2018', rsquo: '\u2019', ldquo: '\u201c', rdquo: '\u201d', deg: '\u00b0',
	middot: '\u00b7', bull: '\u2022', euro: '\u20ac', pound: '\u00a3', copy: '\u00a9'
};
/* Python's [^\W_a-z]: a word character that is not "_" nor an ASCII lower-case letter. */
var WORD_START = '[A-Z0-9\\u00C0-\\u00D6\\u00D8-\\u00F6\\u00F8-\\u1FFF\\u2C00-\\u2FFF\\u3040-\\uD7FF\\uF900-\\uFFDC]';
var BOUNDARY = new RegExp( '[.!?\u2026]+["\'\u201d\u2019)\\]]*\\s+(?=["\'\u201c\u2018(\\[]*' + WORD_START + ')', 'g' );
var INTERWIKI = /^:?[a-z]{2,3}(?:-[a-z]{2,8})?:/;
var COMMENT = /<!--[\s\S]*?(?:-->|$)/g;
var INNER_TEMPLATE = /\{\{([^{}]*)\}\}/g;
var INNER_LINK = /\[\[([^[\]]*)\]\]/g;
var BRACKET_LINK = /\[((?:(?:https?|ftp):)?\/\/[^\s\]<>"]+)([^\]\n]*)\]/gi;
var BARE_URL = /(?:https?|ftp):\/\/[^\s<>[\]"{}|]+/gi;
var REF = /<ref\b[^>]*?\/>|<ref\b[^>]*>[\s\S]*?<\/ref\s*>/gi;

function contains( list, value ) {
	return list.indexOf( value ) !== -1;
}

/**
 * Collapse whitespace and drop markup leftovers (side.extract.wikitext.clean_text).
 *
 * @param {string} text
 * @return {string}
 */
function cleanText( text ) {
	return text
		.replace( /'{2,}/g, '' )
		.replace( /__[A-Z]{3,}__/g, '' )
		.replace( /\s+/g, ' ' )
		.replace( /\(\s*[,;]?\s*\)/g, '' )
		.replace( /\s+([,.;:!?)])/g, '$1' )
		.trim();
}

/**
 * Split the inside of a template or link on the pipes that belong to it.
 *
 * @param {string} inner Text between the braces, e.g. "cite web |url=x |title=[[a|b]]"
 * @return {string[]} The name first, then each parameter as written
 */
function splitPipes( inner ) {
	var parts = [], depth = 0, start = 0, i, two;
	for ( i = 0; i < inner.length; i++ ) {
		two = inner.slice( i, i + 2 );
		if ( two === '{{' || two === '[[' ) {
			depth++;
			i++;
		} else if ( ( two === '}}' || two === ']]' ) && depth > 0 ) {
			depth--;
			i++;
		} else if ( inner[ i ] === '|' && depth === 0 ) {
			parts.push( inner.slice( start, i ) );
			start = i + 1;
		}
	}
	parts.push( inner.slice( start ) );
	return parts;
}

/**
 * Normalised template name: "Template:Cite_web " -> "cite web".
 *
 * @param {string} head
 * @return {string}
 */
function templateName( head ) {
	var name = head.replace( COMMENT, '' ).trim().replace( /_/g, ' ' ).replace( /\s+/g, ' ' ).toLowerCase();
	return name.indexOf( 'template:' ) === 0 ? name.slice( 9 ).trim() : name;
}

/**
 * Parameters of a template by lower-cased name; positional ones under "1", "2", ...
 * The last one wins, as in MediaWiki.
 *
 * @param {string[]} parts Output of splitPipes (name first)
 * @return {Object.<string,string>}
 */
function templateParams( parts ) {
	var params = {}, position = 0, i, eq;
	for ( i = 1; i < parts.length; i++ ) {
		eq = parts[ i ].search( /=/ );
		if ( eq !== -1 && !/[{[]/.test( parts[ i ].slice( 0, eq ) ) ) {
			params[ parts[ i ].slice( 0, eq ).trim().toLowerCase() ] = parts[ i ].slice( eq + 1 );
		} else {
			position++;
			params[ String( position ) ] = parts[ i ];
		}
	}
	return params;
}

function positional( parts ) {
	return parts.slice( 1 ).filter( function ( part ) {
		var eq = part.indexOf( '=' );
		return eq === -1 || /[{[]/.test( part.slice( 0, eq ) );
	} );
}

function renderTemplate( inner ) {
	var parts = splitPipes( inner ), name = templateName( parts[ 0 ] ), values;
	if ( name === 'convert' ) {
		return ' ' + positional( parts ).slice( 0, 2 ).join( ' ' ) + ' ';
	}
	if ( contains( INLINE_TEMPLATES, name ) ) {
		values = positional( parts );
		return values.length ? values[ values.length - 1 ] : '';
	}
	return '';
}

function renderLink( inner ) {
	var pipe = inner.indexOf( '|' ),
		title = ( pipe === -1 ? inner : inner.slice( 0, pipe ) ).trim(),
		colon = title.indexOf( ':' ),
		namespace = colon === -1 ? '' : title.replace( /^:/, '' ).split( ':' )[ 0 ].trim().toLowerCase(),
		leadingColon = title[ 0 ] === ':';
	if ( !leadingColon && ( contains( FILE_NAMESPACES, namespace ) || contains( SKIP_NAMESPACES, namespace ) ) ) {
		return '';
	}
	if ( pipe !== -1 ) {
		return inner.slice( pipe + 1 );
	}
	return INTERWIKI.test( title ) ? '' : title.replace( /^:/, '' );
}

function decodeEntities( text ) {
	return text.replace( /&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, function ( whole, code ) {
		var number;
		if ( code[ 0 ] === '#' ) {
			number = code[ 1 ] === 'x' || code[ 1 ] === 'X' ? parseInt( code.slice( 2 ), 16 ) : parseInt( code.slice( 1 ), 10 );
			return number > 0 && number < 0x10000 ? String.fromCharCode( number ) : whole;
		}
		return Object.prototype.hasOwnProperty.call( ENTITIES, code ) ? ENTITIES[ code ] : whole;
	} );
}

/* List markers and table syntax, once templates and links are gone: their text stays. */
function stripLineMarkup( text ) {
	return text.split( '\n' ).map( function ( line ) {
		if ( /^(\{\||\|-|\|\})/.test( line ) ) {
			return '';
		}
		if ( /^(\|\+?|!)/.test( line ) ) {
			return line.replace( /^(\|\+?|!)/, '' ).split( /\|\||!!/ ).map( function ( cell ) {
				return cell.slice( cell.lastIndexOf( '|' ) + 1 );
			} ).join( ' ' );
		}
		return line.replace( /^[*#:;]+/, '' );
	} ).join( '\n' );
}

function replaceInnermost( text, pattern, render ) {
	var previous;
	do {
		previous = text;
		text = text.replace( pattern, function ( whole, inner ) {
			return render( inner );
		} );
	} while ( text !== previous );
	return text;
}

/**
 * The prose of a piece of wikitext, before whitespace clean-up.
 *
 * @param {string} wikitext
 * @return {string}
 */
function plainText( wikitext ) {
	var text = wikitext.replace( COMMENT, '' ).replace( REF, '' );
	text = replaceInnermost( text, INNER_TEMPLATE, renderTemplate );
	text = stripLineMarkup( replaceInnermost( text, INNER_LINK, renderLink ) );
	text = text.replace( BRACKET_LINK, function ( whole, url, label ) {
		return label;
	} ).replace( BARE_URL, '' );
	text = text.replace( /<br\s*\/?>/gi, ' ' ).replace( /<\/?[a-z][^>]*>/gi, '' );
	return decodeEntities( text );
}

function isAbbreviation( text, dot ) {
	var word = text.slice( text.lastIndexOf( ' ', dot - 1 ) + 1, dot ).replace( /^[(["'\u201c\u2018]+/, '' );
	return word.length === 1 || word.indexOf( '.' ) !== -1 || contains( ABBREVIATIONS, word.toLowerCase() );
}

/**
 * The sentence (or fragment) at the end of a text: what the following ref supports.
 *
 * @param {string} text Clean text
 * @return {string}
 */
function lastSentence( text ) {
	var start = 0, match;
	BOUNDARY.lastIndex = 0;
	while ( ( match = BOUNDARY.exec( text ) ) !== null ) {
		if ( match.index + match[ 0 ].length >= text.length ) {
			break;
		}
		if ( !( match[ 0 ][ 0 ] === '.' && isAbbreviation( text, match.index ) ) ) {
			start = match.index + match[ 0 ].length;
		}
	}
	return text.slice( start ).trim();
}

/**
 * The last `count` words of a text.
 *
 * @param {string} text Clean text
 * @param {number} count
 * @return {string}
 */
function lastWords( text, count ) {
	var words = text ? text.split( ' ' ) : [];
	return words.slice( Math.max( 0, words.length - count ) ).join( ' ' );
}

module.exports = {
	cleanText: cleanText,
	plainText: plainText,
	lastSentence: lastSentence,
	lastWords: lastWords,
	splitPipes: splitPipes,
	templateName: templateName,
	templateParams: templateParams
};
