/**
 * What one reference cites, as side.extract.wikitext.citation_from_body reads it: the URL and title
 * of the first {{cite ...}} template, else of the first link; plus the helpers the ref
 * scanner needs (attributes, masking verbatim blocks, stable keys).
 */
'use strict';

var wikitext = require( './side-wikitext.js' );

var SHORT_TEMPLATES = [ 'sfn', 'sfnp', 'sfnm', 'harvnb', 'harv', 'harvp', 'harvcol', 'harvcolnb' ];
var URL_FIELDS = [ 'url', 'chapter-url', 'chapterurl' ];
var TITLE_FIELDS = [ 'title', 'script-title', 'chapter', 'trans-title', 'titel' ];
var OPAQUE = /<!--[\s\S]*?(?:-->|$)|<(nowiki|pre|math|source|syntaxhighlight|score|timeline|graph|templatedata|chem|ce|hiero|mapframe|maplink|templatestyles)\b[^>]*?(?:\/>|>[\s\S]*?(?:<\/\1\s*>|$))/gi;
var LINK_OR_URL = /\[((?:(?:https?|ftp):)?\/\/[^\s\]<>"]+)([^\]\n]*)\]|((?:https?|ftp):\/\/[^\s<>[\]"{}|]+)/gi;

/*
 * The magic words {{!}} and {{=}}: MediaWiki expands them to "|" and "=" before it reads a
 * template's parameters or a link, so they are the only way to write those characters in a
 * citation's URL or title (side.extract.wikitext reads them so too). Here they are first read as
 * the characters' entities, which split no parameter and end no link, then as the characters:
 * "|" in a URL percent-encoded, as MediaWiki links it.
 */
var MAGIC_CHAR = /\{\{\s*([!=])\s*\}\}/g;
var MAGIC_ENTITIES = { '!': '&#124;', '=': '&#61;' };

function withMagicEntities( body ) {
	return body.replace( MAGIC_CHAR, function ( whole, character ) {
		return MAGIC_ENTITIES[ character ];
	} );
}

/* A URL with the pipe and equals entities as the characters ("|" as %7C). */
function urlText( url ) {
	return url.replace( /&#(?:124|x7c);/gi, '%7C' ).replace( /&#(?:61|x3d);/gi, '=' ).replace( /\|/g, '%7C' );
}

function contains( list, value ) {
	return list.indexOf( value ) !== -1;
}

/**
 * The text with comments and verbatim blocks blanked out, offsets unchanged.
 *
 * @param {string} text
 * @return {string}
 */
function maskOpaque( text ) {
	return text.replace( OPAQUE, function ( whole ) {
		return whole.replace( /[^\n]/g, ' ' ).replace( /\n/g, ' ' );
	} );
}

/**
 * Value of an attribute of a tag, unquoted and whitespace-normalised.
 *
 * @param {string} attributes e.g. ' name="Smith 2001" group=n'
 * @param {string} name
 * @return {string|null}
 */
function attribute( attributes, name ) {
	var match = new RegExp( '(?:^|\\s)' + name + '\\s*=\\s*("[^"]*"|\'[^\']*\'|[^\\s"\'>]+)', 'i' ).exec( attributes || '' ),
		value;
	if ( !match ) {
		return null;
	}
	value = match[ 1 ].replace( /\s+/g, ' ' ).trim().replace( /^["']+|["']+$/g, '' ).trim();
	return value || null;
}

/* eslint-disable no-bitwise */
/* (a * b) mod 2^32 without losing precision (no Math.imul in ES5). */
function multiply32( a, b ) {
	var low = ( a & 0xffff ) * b,
		high = ( ( a >>> 16 ) * b ) & 0xffff;
	return ( low + high * 65536 ) >>> 0;
}

function hex8( n ) {
	return ( '0000000' + n.toString( 16 ) ).slice( -8 );
}

/**
 * Stable hash of a string as 16 hex digits (two FNV-1a passes); used for client keys.
 *
 * @param {string} text
 * @return {string}
 */
function hash( text ) {
	var a = 0x811c9dc5, b = 0x050c5d1f, i, code;
	for ( i = 0; i < text.length; i++ ) {
		code = text.charCodeAt( i );
		a = multiply32( ( a ^ code ) >>> 0, 0x01000193 );
		b = multiply32( ( b ^ code ) >>> 0, 0x5bd1e995 );
	}
	return hex8( a ) + hex8( b );
}
/* eslint-enable no-bitwise */

/**
 * A ref body as side.extract.wikitext.citation_id normalises it (comments and spacing ignored).
 *
 * @param {string} body
 * @return {string}
 */
function normalizeBody( body ) {
	return body.replace( /<!--[\s\S]*?(?:-->|$)/g, '' ).replace( /\s+/g, ' ' ).trim()
		.replace( /\s*(\||=|\{\{|\}\})\s*/g, '$1' );
}

/* Top-level templates of a ref body as [start, end] spans. */
function topTemplates( body ) {
	var spans = [], depth = 0, start = 0, i;
	for ( i = 0; i < body.length - 1; i++ ) {
		if ( body[ i ] === '{' && body[ i + 1 ] === '{' ) {
			if ( depth === 0 ) {
				start = i;
			}
			depth++;
			i++;
		} else if ( body[ i ] === '}' && body[ i + 1 ] === '}' && depth > 0 ) {
			depth--;
			i++;
			if ( depth === 0 ) {
				spans.push( [ start, i + 1 ] );
			}
		}
	}
	return spans;
}

function field( params, names, raw ) {
	var i, value;
	for ( i = 0; i < names.length; i++ ) {
		if ( params[ names[ i ] ] !== undefined ) {
			value = params[ names[ i ] ].replace( /<!--[\s\S]*?(?:-->|$)/g, '' ).trim();
			if ( !raw || value.indexOf( '{{' ) !== -1 ) {
				value = wikitext.cleanText( wikitext.plainText( value ) );
			}
			if ( value ) {
				return raw ? urlText( value ) : value;
			}
		}
	}
	return null;
}

function templateCitation( name, params ) {
	return { kind: 'template', template: name, url: field( params, URL_FIELDS, true ),
		title: field( params, TITLE_FIELDS, false ) };
}

function trimUrl( url ) {
	url = url.replace( /[.,;:!?'"]+$/, '' );
	return /\)$/.test( url ) && url.indexOf( '(' ) === -1 ? url.slice( 0, -1 ) : url;
}

/**
 * What a ref body cites (side.extract.wikitext.citation_from_body): a citation template, a short
 * citation, a bracketed link, a bare URL, another template naming a url or title, or text.
 *
 * @param {string} body
 * @return {{kind: string, template: (string|null), url: (string|null), title: (string|null)}}
 */
function parseCitation( body ) {
	var spans, templates, outside, match, i, title;
	body = withMagicEntities( body );
	spans = topTemplates( body );
	templates = spans.map( function ( span ) {
		var parts = wikitext.splitPipes( body.slice( span[ 0 ] + 2, span[ 1 ] - 2 ) );
		return { name: wikitext.templateName( parts[ 0 ] ), params: wikitext.templateParams( parts ) };
	} );
	for ( i = 0; i < templates.length; i++ ) {
		if ( templates[ i ].name.indexOf( 'cite' ) === 0 || templates[ i ].name === 'citation' ) {
			return templateCitation( templates[ i ].name, templates[ i ].params );
		}
	}
	for ( i = 0; i < templates.length; i++ ) {
		if ( contains( SHORT_TEMPLATES, templates[ i ].name ) ) {
			return { kind: 'short', template: templates[ i ].name, url: null, title: null };
		}
	}
	outside = body.replace( /<!--[\s\S]*?(?:-->|$)/g, function ( c ) {
		return c.replace( /[\s\S]/g, ' ' );
	} );
	spans.forEach( function ( span ) {
		outside = outside.slice( 0, span[ 0 ] ) + outside.slice( span[ 0 ], span[ 1 ] ).replace( /[\s\S]/g, ' ' ) + outside.slice( span[ 1 ] );
	} );
	LINK_OR_URL.lastIndex = 0;
	match = LINK_OR_URL.exec( outside );
	if ( match && match[ 1 ] ) {
		title = wikitext.cleanText( wikitext.plainText( match[ 2 ] ) );
		return { kind: 'external_link', template: null, url: urlText( match[ 1 ] ), title: title || null };
	}
	if ( match ) {
		return { kind: 'bare_url', template: null, url: trimUrl( urlText( match[ 3 ] ) ), title: null };
	}
	for ( i = 0; i < templates.length; i++ ) {
		if ( URL_FIELDS.concat( TITLE_FIELDS ).some( Object.prototype.hasOwnProperty.bind( templates[ i ].params ) ) ) {
			return templateCitation( templates[ i ].name, templates[ i ].params );
		}
	}
	title = wikitext.cleanText( wikitext.plainText( body ) ).slice( 0, 300 );
	return { kind: 'text', template: null, url: null, title: title || null };
}

module.exports = {
	maskOpaque: maskOpaque,
	attribute: attribute,
	hash: hash,
	normalizeBody: normalizeBody,
	parseCitation: parseCitation
};
