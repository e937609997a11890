'use strict';

/**
 * side-visual.js against a small fake of the VisualEditor API it uses: a linear model in
 * VisualEditor's own format (elements, characters, [character, annotation hashes], an
 * internal list of reference bodies), a surface model whose fragments insert content, and a
 * ve.dm.MWReferenceModel that adds list items and reference nodes as Cite's does. The real
 * VisualEditor is exercised in tests/test_gadget_e2e.py.
 */
const { visualEditor, mirror, parseTemplate, transclusionElement } = require( '../src/side-visual.js' );
const { findRefs } = require( '../src/side-refs.js' );
const { planInsertion } = require( '../src/side-insert.js' );
const $ = require( 'jquery' );
const { createMw } = require( './helpers/mw.js' );

function chars( text, hashes ) {
	return text.split( '' ).map( ( c ) => ( hashes ? [ c, hashes ] : c ) );
}

function cite( url, title ) {
	return { type: 'mwTransclusionInline', attributes: { mw: { parts: [ { template: {
		target: { wt: 'cite web ', href: './Template:Cite_web' },
		params: { url: { wt: url }, title: { wt: title } }, i: 0 } } ] } } };
}

function ref( listIndex, listKey ) {
	return [ { type: 'mwReference', attributes: { listIndex, listKey, listGroup: 'mwReference/', refGroup: '' } },
		{ type: '/mwReference' } ];
}

/* The document VisualEditor builds for the page in tests/test_gadget_e2e.py, shortened. */
function articleData() {
	return [
		{ type: 'paragraph' }, ...chars( 'Alsea is a restaurant operator.' ), { type: '/paragraph' },
		{ type: 'mwHeading', attributes: { level: 2 } }, ...chars( 'Business' ), { type: '/mwHeading' },
		{ type: 'paragraph' }, ...chars( 'Alsea operates Starbucks in Mexico.' ), ...ref( 0, 'auto/0' ),
		...chars( ' Alsea was founded in 1997.' ), ...ref( 1, 'literal/weather' ), { type: '/paragraph' },
		{ type: 'mwReferencesList', attributes: { listGroup: 'mwReference/' } }, { type: '/mwReferencesList' },
		{ type: 'internalList' },
		{ type: 'internalItem' }, { type: 'paragraph' }, cite( 'http://example.org/alsea', 'Annual report' ),
		{ type: '/mwTransclusionInline' }, { type: '/paragraph' }, { type: '/internalItem' },
		{ type: 'internalItem' }, { type: 'paragraph' }, ...chars( 'Weather', [ 'hlink' ] ), { type: '/paragraph' },
		{ type: '/internalItem' },
		{ type: '/internalList' }
	];
}

class Range {
	constructor( from, to ) {
		this.start = Math.min( from, to === undefined ? from : to );
		this.end = Math.max( from, to === undefined ? from : to );
		this.from = from;
		this.to = to === undefined ? from : to;
	}
}

class FakeDocument {
	constructor( data ) {
		this.data = { data };
		this.annotations = { hlink: { type: 'link/mwExternal', attributes: { href: 'http://example.org/weather' } } };
	}

	getStore() {
		return { value: ( hash ) => ( { element: this.annotations[ hash ] } ) };
	}

	/* Item nodes: the internalItem elements in order; their range is what is between. */
	items() {
		const items = [];
		let open = null, depth = 0;
		this.data.data.forEach( ( item, i ) => {
			if ( item.type === 'internalItem' && depth++ === 0 ) {
				open = i;
			} else if ( item.type === '/internalItem' && --depth === 0 ) {
				items.push( { start: open + 1, end: i } );
			}
		} );
		return items;
	}

	getInternalList() {
		return {
			getItemNode: ( index ) => {
				const range = this.items()[ index ];
				return range && { getRange: () => range };
			},
			getNextUniqueNumber: () => this.items().length
		};
	}

	cloneWithData( data ) {
		return new FakeDocument( data );
	}
}

function fakeSurface( data ) {
	const doc = new FakeDocument( data ), handlers = [];
	const model = {
		selection: null,
		getDocument: () => doc,
		getLinearFragment: ( range ) => ( {
			insertContent( content ) {
				doc.data.data.splice( range.start, 0, ...content );
				handlers.forEach( ( handler ) => handler() );
			}
		} ),
		setLinearSelection( range ) {
			this.selection = range;
		},
		on( event, handler ) {
			expect( event ).toBe( 'history' );
			handlers.push( handler );
		}
	};
	return { doc, model, getModel: () => model, $element: { after() {} }, getMode: () => 'visual' };
}

/* Cite's reference model, reduced to what the gadget calls. */
class MWReferenceModel {
	constructor( parentDoc ) {
		this.parentDoc = parentDoc;
		this.group = '';
	}

	setDocument( doc ) {
		this.doc = doc;
	}

	insertInternalItem( surfaceModel ) {
		const data = surfaceModel.getDocument().data.data, end = data.findIndex( ( x ) => x.type === '/internalList' );
		const body = this.doc.data.data.slice( 0, this.doc.data.data.findIndex( ( x ) => x.type === 'internalList' ) );
		this.listIndex = surfaceModel.getDocument().items().length;
		this.listKey = 'auto/' + this.listIndex;
		data.splice( end, 0, { type: 'internalItem' }, ...body, { type: '/internalItem' } );
	}

	insertReferenceNode( fragment ) {
		fragment.insertContent( [ { type: 'mwReference', attributes: { listKey: this.listKey,
			listGroup: 'mwReference/', listIndex: this.listIndex, refGroup: '' } }, { type: '/mwReference' } ] );
	}
}

const VE = { Range, dm: { MWReferenceModel } };

describe( 'mirror', () => {
	test( 'writes the document as wikitext the gadget reads like the source editor', () => {
		const view = mirror( new FakeDocument( articleData() ) );
		expect( view.text ).toBe( 'Alsea is a restaurant operator.\n\n\n== Business ==\n' +
			'Alsea operates Starbucks in Mexico.<ref>{{cite web |url=http://example.org/alsea |title=Annual report}}</ref>' +
			' Alsea was founded in 1997.<ref name="weather">[http://example.org/weather Weather]</ref>\n\n' +
			'\n<references />\n' );
		expect( view.offsets ).toHaveLength( view.text.length + 1 );
		const uses = findRefs( view.text );
		expect( uses.map( ( use ) => [ use.text, use.url, use.section ] ) ).toEqual( [
			[ 'Alsea operates Starbucks in Mexico.', 'http://example.org/alsea', [ 'Business' ] ],
			[ 'Alsea was founded in 1997.', 'http://example.org/weather', [ 'Business' ] ]
		] );
		expect( uses[ 1 ].name ).toBe( 'weather' );
		// Each <ref>…</ref> stands for its reference node: its first character maps to the node.
		expect( view.refs.map( ( r ) => [ view.offsets[ r.start ], r.offset, view.offsets[ r.end ] ] ) )
			.toEqual( [ [ 79, 79, 81 ], [ 108, 108, 110 ] ] );
		expect( articleData()[ 79 ].type ).toBe( 'mwReference' );
	} );

	test( 'a reference used twice reads as the same source both times', () => {
		const data = articleData();
		data.splice( 110, 0, ...chars( ' Again.' ), ...ref( 0, 'auto/0' ) );
		const uses = findRefs( mirror( new FakeDocument( data ) ).text );
		expect( uses.map( ( use ) => use.url ) ).toEqual( [ 'http://example.org/alsea', 'http://example.org/weather',
			'http://example.org/alsea' ] );
	} );
} );

describe( 'parseTemplate', () => {
	test( 'splits at the top-level pipes only', () => {
		expect( parseTemplate( '{{cite web |url=http://a.example/x?y=1 |title=A {{!}} B |access-date=2026-11-24}}' ) )
			.toEqual( { name: 'cite web', params: { url: { wt: 'http://a.example/x?y=1' },
				title: { wt: 'A {{!}} B' }, 'access-date': { wt: '2026-11-24' } } } );
		expect( parseTemplate( 'plain text' ) ).toBeNull();
	} );

	test( 'builds a transclusion node of the template', () => {
		expect( transclusionElement( '{{cite web |url=http://a.example}}' ).attributes.mw.parts[ 0 ].template.target )
			.toEqual( { wt: 'cite web', href: './Template:Cite_web' } );
		expect( transclusionElement( '<b>no</b>' ) ).toBeNull();
	} );
} );

describe( 'visualEditor', () => {
	test( 'inserts a Cite reference holding {{cite web}} right after the weak citation', () => {
		const surface = fakeSurface( articleData() ), editor = visualEditor( surface, VE );
		let changes = 0;
		editor.onChange( () => changes++ );
		const text = editor.getText(), weak = findRefs( text )[ 1 ];
		const plan = planInsertion( text, weak.key, { url: 'http://example.org/history', title: 'History' },
			new Date( Date.UTC( 2026, 10, 24 ) ) );
		editor.insertEdits( plan.edits || [ plan ] );
		expect( changes ).toBe( 1 );
		const data = surface.doc.data.data;
		// The new node sits right after the weak one's, and points at a new list item.
		expect( data[ 110 ] ).toEqual( { type: 'mwReference', attributes: { listKey: 'auto/2',
			listGroup: 'mwReference/', listIndex: 2, refGroup: '' } } );
		const item = surface.doc.items()[ 2 ];
		expect( data.slice( item.start, item.end ).map( ( x ) => x.type ) )
			.toEqual( [ 'paragraph', 'mwTransclusionInline', '/mwTransclusionInline', '/paragraph' ] );
		expect( data[ item.start + 1 ].attributes.mw.parts[ 0 ].template.params ).toEqual( {
			url: { wt: 'http://example.org/history' }, title: { wt: 'History' }, 'access-date': { wt: '2026-11-24' } } );
		// Read back, the document has the citation the source editor would have got.
		const after = editor.getText();
		expect( after ).toContain( '[http://example.org/weather Weather]</ref>' +
			'<ref>{{cite web |url=http://example.org/history |title=History |access-date=2026-11-24}}</ref>' );
		expect( planInsertion( after, weak.key, { url: 'http://example.org/history' } ) ).toEqual( { error: 'duplicate' } );
	} );

	test( 'reuses one of the article\'s own references as a second node of its list item', () => {
		const surface = fakeSurface( articleData() ), editor = visualEditor( surface, VE );
		const text = editor.getText(), uses = findRefs( text );
		// The unnamed first reference is reused after the second citation: the plan names it.
		const plan = planInsertion( text, uses[ 1 ].key, { url: 'http://example.org/alsea', origin: 'article',
			reuse_ref: 'alsea' } );
		expect( plan.edits ).toHaveLength( 2 );
		editor.insertEdits( plan.edits );
		const data = surface.doc.data.data;
		expect( data[ 110 ] ).toEqual( expect.objectContaining( { type: 'mwReference',
			attributes: { listKey: 'auto/0', listGroup: 'mwReference/', listIndex: 0, refGroup: '' } } ) );
		expect( surface.doc.items() ).toHaveLength( 2 );
		expect( findRefs( editor.getText() ).map( ( use ) => use.url ) ).toEqual( [ 'http://example.org/alsea',
			'http://example.org/weather', 'http://example.org/alsea' ] );
	} );

	test( 'reuses a named reference by its name', () => {
		const surface = fakeSurface( articleData() ), editor = visualEditor( surface, VE );
		const text = editor.getText(), uses = findRefs( text );
		const plan = planInsertion( text, uses[ 0 ].key, { url: 'http://example.org/weather', origin: 'article',
			reuse_ref: 'weather' } );
		editor.insertEdits( plan.edits );
		expect( surface.doc.data.data[ 81 ].attributes ).toEqual( { listKey: 'literal/weather',
			listGroup: 'mwReference/', listIndex: 1, refGroup: '' } );
	} );

	test( 'refuses wikitext it cannot express as model nodes, changing nothing', () => {
		const surface = fakeSurface( articleData() ), editor = visualEditor( surface, VE );
		expect( () => editor.insert( 10, '<ref>plain words</ref>' ) ).toThrow( /not one template call/ );
		expect( () => editor.insert( 10, '\'\'\'bold\'\'\'' ) ).toThrow( /cannot insert/ );
		expect( surface.doc.data.data ).toEqual( articleData() );
	} );

	test( 'selects the reference node of a citation', () => {
		const surface = fakeSurface( articleData() ), editor = visualEditor( surface, VE );
		const use = findRefs( editor.getText() )[ 0 ];
		editor.select( use.start, use.end );
		expect( [ surface.model.selection.start, surface.model.selection.end ] ).toEqual( [ 79, 81 ] );
	} );
} );

describe( 'side.js in visual mode', () => {
	function loadGadget( surface ) {
		document.body.innerHTML = '<div id="surface"></div>';
		surface.$element = $( '#surface' );
		const mw = createMw( { config: { wgPageContentModel: 'wikitext', wgNamespaceNumber: 0,
			wgDBname: 'testwiki', wgPageName: 'Alsea', wgCurRevisionId: 7 } } );
		global.mw = mw;
		// eslint-disable-next-line no-jquery/variable-pattern -- the jQuery global itself
		global.$ = $;
		window.ve = Object.assign( { init: { target: { getSurface: () => surface } } }, VE );
		window.sideGadgetConfig = { apiUrl: 'https://side.example.org' };
		jest.isolateModules( () => {
			require( '../src/side.js' );
		} );
		return mw;
	}

	afterEach( () => {
		delete window.ve;
	} );

	test( 'starts once per surface on "ve.activationComplete", under it, inserting through the model', () => {
		const surface = fakeSurface( articleData() ), mw = loadGadget( surface ), ready = [];
		mw.hook( 'side.ready' ).add( ( controller ) => ready.push( controller ) );
		mw.hook( 've.activationComplete' ).fire();
		mw.hook( 've.activationComplete' ).fire(); // e.g. after a dialog: same surface, no second panel
		expect( ready ).toHaveLength( 1 );
		expect( document.querySelectorAll( '.side-panel' ) ).toHaveLength( 1 );
		expect( document.querySelector( '#surface + .side-panel' ) ).not.toBeNull();
		const weak = findRefs( mirror( surface.doc ).text )[ 1 ];
		ready[ 0 ].insert( weak.key, { url: 'http://example.org/history', title: 'History' } );
		expect( surface.doc.data.data[ 110 ] ).toEqual( expect.objectContaining( { type: 'mwReference' } ) );
		expect( mw.log.error ).not.toHaveBeenCalled();
	} );
} );
