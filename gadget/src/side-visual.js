/**
 * VisualEditor's visual mode as a gadget editor (the interface of side-editors.js).
 *
 * Visual mode has no wikitext to read, and serialising through Parsoid is a request per
 * keystroke. So the adapter writes a wikitext mirror of the document model itself, on the
 * spot: paragraphs, headings and text as they are, each reference node as
 * <ref name="…">body</ref> with its body rebuilt from the reference's internal item
 * ({{cite web |url=…}} from a transclusion's parameters, [url text] from an external link).
 * The gadget's wikitext reader (side-refs.js) then finds the same citations, claims and keys
 * as in the source editor, and every mirror offset keeps the model offset it came from, so
 * "Show" selects the reference node and "Insert citation" lands right after it.
 *
 * Insertions go through VisualEditor's own model, as Cite's dialog does
 * (ve.dm.MWReferenceModel): a new reference node whose body is a {{cite web}} transclusion,
 * or, to reuse one of the article's sources, a second node of that reference's list item
 * (VisualEditor names it when it saves). The page is saved by VisualEditor, so Parsoid writes
 * the wikitext: <ref>{{cite web|url=…|title=…}}</ref>.
 */
'use strict';

var wikitextReader = require( './side-wikitext.js' );

/* Where the mirror stops: nothing after the document's internal list is article text. */
var BLOCK_BREAK = { paragraph: '\n\n', mwHeading: '\n', heading: '\n', mwPreformatted: '\n\n', preformatted: '\n\n' };
var REF_TEXT = /^<ref>([\s\S]*)<\/ref>$/;
var REF_REUSE = /^<ref\s+name\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s/>]+))\s*\/>$/;
var NAME_TEXT = /^\s+name\s*=\s*(?:"([^"]*)"|'([^']*)')$/;

function elementType( item ) {
	return item && typeof item === 'object' && !Array.isArray( item ) ? item.type : null;
}

/**
 * A template part's wikitext, from data-mw (Parsoid's "parts").
 *
 * @param {Object|string} part
 * @return {string}
 */
function partWikitext( part ) {
	var template, names, text;
	if ( typeof part === 'string' ) {
		return part;
	}
	template = part.template || part.templatearg;
	if ( !template ) {
		return '';
	}
	text = String( ( template.target && template.target.wt ) || '' ).trim();
	names = Object.keys( template.params || {} );
	names.forEach( function ( name ) {
		var value = template.params[ name ] && template.params[ name ].wt;
		text += ' |' + ( /^[0-9]+$/.test( name ) ? '' : name + '=' ) + String( value || '' );
	} );
	return part.templatearg ? '{{{' + text + '}}}' : '{{' + text + '}}';
}

/**
 * The wikitext of a transclusion node's data-mw.
 *
 * @param {Object} element The node's open element
 * @return {string}
 */
function transclusionWikitext( element ) {
	var mw = element.attributes && element.attributes.mw;
	return ( mw && mw.parts || [] ).map( partWikitext ).join( '' );
}

/**
 * Split a template's wikitext ("{{name |a=b |c}}") into its name and parameters, the way
 * MediaWiki does: at the pipes that are not inside a nested {{…}}, [[…]] or [...].
 *
 * @param {string} wikitext
 * @return {{name: string, params: Object.<string,string>}|null}
 */
function parseTemplate( wikitext ) {
	var pieces, params = {}, positional = 0;
	wikitext = String( wikitext || '' ).trim();
	if ( wikitext.slice( 0, 2 ) !== '{{' || wikitext.slice( -2 ) !== '}}' ) {
		return null;
	}
	pieces = wikitextReader.splitPipes( wikitext.slice( 2, -2 ) );
	pieces.slice( 1 ).forEach( function ( piece ) {
		var equals = piece.indexOf( '=' );
		if ( equals === -1 ) {
			params[ String( ++positional ) ] = { wt: piece.trim() };
		} else {
			params[ piece.slice( 0, equals ).trim() ] = { wt: piece.slice( equals + 1 ).trim() };
		}
	} );
	return { name: pieces[ 0 ].trim(), params: params };
}

/**
 * The open element of a transclusion node holding one template call.
 *
 * @param {string} wikitext "{{cite web |url=…}}"
 * @return {Object|null} null when the text is not one template call
 */
function transclusionElement( wikitext ) {
	var template = parseTemplate( wikitext ), name;
	if ( !template || !template.name ) {
		return null;
	}
	name = template.name.charAt( 0 ).toUpperCase() + template.name.slice( 1 );
	return { type: 'mwTransclusionInline', attributes: { mw: { parts: [ { template: {
		target: { wt: template.name, href: './Template:' + name.replace( / /g, '_' ) },
		params: template.params, i: 0 } } ] } } };
}

/**
 * A reference's name as written in wikitext, from its list key ("literal/x"); VisualEditor's
 * own keys ("auto/0") are not names.
 *
 * @param {Object} attributes The reference node's attributes
 * @return {string}
 */
function refName( attributes ) {
	var key = String( attributes.listKey || '' );
	return key.indexOf( 'literal/' ) === 0 ? key.slice( 'literal/'.length ) : '';
}

/* The URL of the external link among a character's annotations, or null. */
function linkHref( hashes, annotation ) {
	var k, element;
	for ( k = 0; k < hashes.length; k++ ) {
		element = annotation( hashes[ k ] );
		if ( element && /^link\/mwExternal|^link$/.test( element.type ) && element.attributes ) {
			return element.attributes.href;
		}
	}
	return null;
}

/**
 * Wikitext for a run of linear data (a reference's body): text, external links as [url text],
 * transclusions from their data-mw; other nodes are left out.
 *
 * @param {Array} data Linear data items
 * @param {Function} annotation Hash to annotation element (the document's store)
 * @return {string}
 */
function bodyWikitext( data, annotation ) {
	var out = '', link = null, linkText = '', i, item, type, href;
	function closeLink() {
		if ( link !== null ) {
			out += '[' + link + ( linkText ? ' ' + linkText : '' ) + ']';
			link = null;
			linkText = '';
		}
	}
	for ( i = 0; i < data.length; i++ ) {
		item = data[ i ];
		type = elementType( item );
		if ( type === null ) {
			href = linkHref( Array.isArray( item ) ? item[ 1 ] : [], annotation );
			if ( href !== link ) {
				closeLink();
				link = href;
			}
			if ( link !== null ) {
				linkText += Array.isArray( item ) ? item[ 0 ] : item;
			} else {
				out += Array.isArray( item ) ? item[ 0 ] : item;
			}
			continue;
		}
		closeLink();
		if ( /^mwTransclusion/.test( type ) ) {
			out += transclusionWikitext( item );
		} else if ( type === 'link/mwNumberedExternal' && item.attributes ) {
			out += '[' + item.attributes.href + ']';
		}
	}
	closeLink();
	return out;
}

/**
 * The wikitext mirror of a VisualEditor document and the model offset of each of its
 * characters.
 *
 * @param {Object} doc ve.dm.Document
 * @return {{text: string, offsets: number[], refs: Object[]}} offsets has text.length + 1
 *  entries; refs: { start, end, offset, attributes } for each reference node
 */
function mirror( doc ) {
	var data = doc.data.data, store = doc.getStore(), internalList = doc.getInternalList(),
		text = '', offsets = [], refs = [], i, item, type, depth, start,
		bodies = {};

	function annotation( hash ) {
		var value = store.value( hash );
		return value && ( value.element || value );
	}

	function emit( piece, offset ) {
		var k;
		text += piece;
		for ( k = 0; k < piece.length; k++ ) {
			offsets.push( offset );
		}
	}

	function body( attributes ) {
		var node, range;
		if ( bodies[ attributes.listIndex ] === undefined ) {
			node = internalList.getItemNode( attributes.listIndex );
			range = node && node.getRange();
			bodies[ attributes.listIndex ] = range ? bodyWikitext( data.slice( range.start, range.end ), annotation ) : '';
		}
		return bodies[ attributes.listIndex ];
	}

	for ( i = 0; i < data.length; i++ ) {
		item = data[ i ];
		type = elementType( item );
		if ( type === 'internalList' ) {
			break;
		}
		if ( type === null ) {
			emit( Array.isArray( item ) ? item[ 0 ] : item, i );
		} else if ( type === 'mwReference' ) {
			start = text.length;
			emit( '<ref' + ( refName( item.attributes ) ? ' name="' + refName( item.attributes ) + '"' : '' ) + '>' +
				body( item.attributes ) + '</ref>', i );
			refs.push( { start: start, end: text.length, offset: i, attributes: item.attributes } );
			i++; // the node's close element
		} else if ( /^mwTransclusion/.test( type ) || type === 'mwReferencesList' ) {
			emit( type === 'mwReferencesList' ? '\n<references />\n' : transclusionWikitext( item ), i );
			for ( depth = 1; depth > 0 && i + 1 < data.length; ) { // skip to the node's close
				i++;
				depth += elementType( data[ i ] ) === type ? 1 : elementType( data[ i ] ) === '/' + type ? -1 : 0;
			}
		} else if ( type === 'mwHeading' || type === 'heading' ) {
			emit( '\n' + '======'.slice( 0, ( item.attributes && item.attributes.level ) || 2 ) + ' ', i );
		} else if ( type === '/mwHeading' || type === '/heading' ) {
			emit( ' ' + '======'.slice( 0, ( data[ findOpen( data, i ) ].attributes || {} ).level || 2 ) + '\n', i );
		} else if ( type.charAt( 0 ) === '/' ) {
			emit( BLOCK_BREAK[ type.slice( 1 ) ] || '\n', i );
		}
	}
	offsets.push( i );
	return { text: text, offsets: offsets, refs: refs };
}

/* The open element of the heading that data[ close ] closes (headings do not nest). */
function findOpen( data, close ) {
	var j, type = elementType( data[ close ] ).slice( 1 );
	for ( j = close - 1; j >= 0; j-- ) {
		if ( elementType( data[ j ] ) === type ) {
			return j;
		}
	}
	return close;
}

/**
 * @param {Object} surface ve.ui.Surface in visual mode (ve.init.target.getSurface())
 * @param {Object} ve The VisualEditor namespace (ve.Range, ve.dm.MWReferenceModel)
 * @return {Object} Editor, plus insertEdits( edits ) for a whole insertion plan
 */
function visualEditor( surface, ve ) {
	var model = surface.getModel();

	function current() {
		return mirror( model.getDocument() );
	}

	function refAt( view, offset ) {
		var k;
		for ( k = 0; k < view.refs.length; k++ ) {
			if ( view.refs[ k ].start <= offset && offset < view.refs[ k ].end ) {
				return view.refs[ k ];
			}
		}
		return null;
	}

	/* A new reference node after `at`, whose body is the template call. */
	function insertReference( at, wikitext ) {
		var doc = model.getDocument(), reference = new ve.dm.MWReferenceModel( doc ),
			transclusion = transclusionElement( wikitext );
		if ( !transclusion ) {
			throw new Error( 'Side: not one template call: ' + wikitext );
		}
		reference.setDocument( doc.cloneWithData( [
			{ type: 'paragraph', internal: { generated: 'wrapper' } },
			transclusion, { type: '/' + transclusion.type },
			{ type: '/paragraph' },
			{ type: 'internalList' }, { type: '/internalList' }
		] ) );
		reference.insertInternalItem( model );
		reference.insertReferenceNode( model.getLinearFragment( new ve.Range( at ) ) );
	}

	/* One more use of an existing reference (same list item: VisualEditor names both on save). */
	function reuseReference( at, attributes ) {
		model.getLinearFragment( new ve.Range( at ) ).insertContent( [
			{ type: 'mwReference', attributes: { listKey: attributes.listKey, listGroup: attributes.listGroup,
				listIndex: attributes.listIndex, refGroup: attributes.refGroup },
			originalDomElementsHash: Math.random() },
			{ type: '/mwReference' }
		] );
	}

	/**
	 * Apply a plan's insertions (side-insert.js) to the model: "<ref>{{…}}</ref>" becomes a
	 * reference node, "<ref name=x />" a reuse, ' name="x"' names the reference it lands in.
	 *
	 * @param {Object[]} edits offset and text in the mirror, as planned on getText()
	 */
	function insertEdits( edits ) {
		var view = current(), named = {}, actions = [];
		view.refs.forEach( function ( ref ) {
			if ( refName( ref.attributes ) ) {
				named[ refName( ref.attributes ) ] = ref;
			}
		} );
		edits.forEach( function ( edit ) {
			var match = NAME_TEXT.exec( edit.text ), ref = refAt( view, edit.offset );
			if ( match && ref ) {
				named[ match[ 1 ] !== undefined ? match[ 1 ] : match[ 2 ] ] = ref;
			}
		} );
		edits.forEach( function ( edit ) {
			var at = view.offsets[ Math.min( edit.offset, view.text.length ) ], match, name;
			if ( NAME_TEXT.test( edit.text ) ) {
				return;
			}
			match = REF_REUSE.exec( edit.text );
			if ( match ) {
				name = [ match[ 1 ], match[ 2 ], match[ 3 ] ].filter( function ( part ) {
					return part !== undefined;
				} )[ 0 ];
				if ( !named[ name ] ) {
					throw new Error( 'Side: no reference named ' + name );
				}
				actions.push( { offset: at, run: reuseReference.bind( null, at, named[ name ].attributes ) } );
				return;
			}
			match = REF_TEXT.exec( edit.text );
			if ( !match ) {
				throw new Error( 'Side: cannot insert ' + edit.text + ' in visual mode' );
			}
			actions.push( { offset: at, run: insertReference.bind( null, at, match[ 1 ] ) } );
		} );
		// The last in the document first, so that the offsets of the others hold.
		actions.sort( function ( a, b ) {
			return b.offset - a.offset;
		} ).forEach( function ( action ) {
			action.run();
		} );
	}

	return {
		mount: function ( element ) {
			surface.$element.after( element );
		},
		getText: function () {
			return current().text;
		},
		insert: function ( offset, text ) {
			insertEdits( [ { offset: offset, text: text } ] );
		},
		insertEdits: insertEdits,
		select: function ( start, end ) {
			var view = current(), from = view.offsets[ start ], ref = refAt( view, start );
			model.setLinearSelection( new ve.Range( from, ref && ref.end === end ? ref.offset + 2 :
				view.offsets[ Math.min( end, view.text.length ) ] ) );
		},
		onChange: function ( handler ) {
			model.on( 'history', handler );
		}
	};
}

module.exports = {
	visualEditor: visualEditor,
	mirror: mirror,
	parseTemplate: parseTemplate,
	transclusionElement: transclusionElement
};
