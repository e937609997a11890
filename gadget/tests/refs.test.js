'use strict';

const { findRefs } = require( '../src/side-refs.js' );
const { describeWithData, readArticle, allArticles } = require( './helpers/fixtures.js' );

const ARTICLE = `{{Infobox company
| name = Alsea
| founded = 1997<ref>{{cite news |url=https://example.org/founded |title=Founding}}</ref>
}}
'''Alsea''' is a [[Mexico|Mexican]] restaurant operator.<ref name="cnn">{{cite web |url=https://example.org/cnn |title=Top 10 del Ranking}}</ref> It runs [[Starbucks]] in Mexico.<ref>[https://example.org/starbucks Starbucks deal]</ref><!-- <ref>https://hidden.example.org</ref> -->

== History ==
Founded in 1997 by Dr. Smith in Mexico City.<ref name="cnn" /> The route is {{convert|5|km}} long.<ref>https://example.org/route.</ref>
<nowiki><ref>https://nowiki.example.org</ref></nowiki>
[[File:Logo.png|thumb|The logo in 2015.<ref>[https://example.org/logo Logo]</ref>]]

=== Stores ===
* First store opened in 1998.<ref name="ld" />
* Second store in 1999.<ref>{{sfn|Smith|2001|p=4}}</ref>

== References ==
{{reflist|refs=
<ref name="ld">{{cite web |url=https://example.org/list-defined |title=Stores}}</ref>
}}
<references>
<ref name="unused">{{cite web |url=https://example.org/unused}}</ref>
</references>
`;

describe( 'findRefs on a hand-written article', () => {
	const uses = findRefs( ARTICLE );

	it( 'finds every <ref> use in order, skipping comments, nowiki and list-defined refs', () => {
		expect( uses.map( ( use ) => use.url ) ).toEqual( [
			'https://example.org/founded',
			'https://example.org/cnn',
			'https://example.org/starbucks',
			'https://example.org/cnn',
			'https://example.org/route',
			'https://example.org/logo',
			'https://example.org/list-defined',
			null
		] );
	} );

	it( 'takes the claim sentence before each ref, as side.extract.wikitext does', () => {
		expect( uses.map( ( use ) => use.text ) ).toEqual( [
			'1997',
			'Alsea is a Mexican restaurant operator.',
			'It runs Starbucks in Mexico.',
			'Founded in 1997 by Dr. Smith in Mexico City.',
			'The route is 5 km long.',
			'The logo in 2015.',
			'First store opened in 1998.',
			'Second store in 1999.'
		] );
	} );

	it( 'reads section paths and the words before the ref', () => {
		expect( uses[ 1 ].section ).toEqual( [] );
		expect( uses[ 3 ].section ).toEqual( [ 'History' ] );
		expect( uses[ 6 ].section ).toEqual( [ 'History', 'Stores' ] );
		expect( uses[ 2 ].leftContext ).toBe( 'Alsea is a Mexican restaurant operator. It runs Starbucks in Mexico.' );
		expect( uses[ 0 ].leftContext ).toBe( '1997' );
	} );

	it( 'classifies citations and resolves named reuses', () => {
		expect( uses[ 1 ] ).toMatchObject( { kind: 'template', template: 'cite web', name: 'cnn', title: 'Top 10 del Ranking' } );
		expect( uses[ 3 ] ).toMatchObject( { kind: 'template', name: 'cnn', url: 'https://example.org/cnn' } );
		expect( uses[ 2 ] ).toMatchObject( { kind: 'external_link', title: 'Starbucks deal' } );
		expect( uses[ 4 ] ).toMatchObject( { kind: 'bare_url', url: 'https://example.org/route' } );
		expect( uses[ 7 ] ).toMatchObject( { kind: 'short', url: null } );
	} );

	it( 'gives offsets that cover exactly the ref markup', () => {
		uses.forEach( ( use ) => {
			const markup = ARTICLE.slice( use.start, use.end );
			expect( markup ).toMatch( /^<ref\b/ );
			expect( markup ).toMatch( /(<\/ref>|\/>)$/ );
		} );
		expect( ARTICLE.slice( uses[ 3 ].start, uses[ 3 ].end ) ).toBe( '<ref name="cnn" />' );
	} );

	it( 'keys a use by its source and sentence, not by its position', () => {
		const moved = findRefs( 'Intro text.\n\n' + ARTICLE );
		expect( moved.map( ( use ) => use.key ) ).toEqual( uses.map( ( use ) => use.key ) );
		const edited = findRefs( ARTICLE.replace( 'It runs [[Starbucks]] in Mexico.', 'It runs [[Starbucks]] in Spain.' ) );
		expect( edited[ 2 ].key ).not.toBe( uses[ 2 ].key );
		expect( edited.filter( ( use, i ) => use.key !== uses[ i ].key ) ).toHaveLength( 1 );
		expect( new Set( uses.map( ( use ) => use.key ) ).size ).toBe( uses.length );
	} );

	it( 'reads {{!}} in a citation as a pipe: %7C in its URL, | in its title, as side.extract.wikitext does', () => {
		const found = findRefs( 'The harbour opened in 1902.<ref>{{cite web |url=http://news.example/a?id=7{{!}}8&lang=en ' +
			'|title=Port {{ ! }} Harbour}}</ref> It was rebuilt.<ref>[http://news.example/a?id=7{{!}}8 Port]</ref> ' +
			'It is long.<ref>http://news.example/a?id=7{{!}}8{{!}}</ref> It is old.<ref>{{cite web |url=http://x.example/a{{=}}b}}</ref>' );
		expect( found.map( ( use ) => [ use.kind, use.url ] ) ).toEqual( [
			[ 'template', 'http://news.example/a?id=7%7C8&lang=en' ], [ 'external_link', 'http://news.example/a?id=7%7C8' ],
			[ 'bare_url', 'http://news.example/a?id=7%7C8%7C' ], [ 'template', 'http://x.example/a=b' ] ] );
		expect( found[ 0 ].title ).toBe( 'Port | Harbour' );
		expect( found[ 1 ].title ).toBe( 'Port' );
	} );

	it( 'never throws on broken wikitext and treats an unclosed {{ as text', () => {
		const text = 'Broken {{cite web |url=x\n\nSecond paragraph.<ref>https://example.org/a</ref> <ref>unclosed';
		const found = findRefs( text );
		expect( found ).toHaveLength( 1 );
		expect( found[ 0 ] ).toMatchObject( { text: 'Second paragraph.', url: 'https://example.org/a' } );
		expect( findRefs( '' ) ).toEqual( [] );
		expect( findRefs( '<ref name=x/>' ) ).toHaveLength( 1 );
	} );
} );

describeWithData( 'findRefs on real articles (shared/data/fixtures/wikitext)', () => {
	it( 'reads Alsea (company) like side.extract.wikitext.extract_claims', () => {
		const uses = findRefs( readArticle( 'Alsea-(company).txt' ) );
		expect( uses ).toHaveLength( 4 );
		expect( uses[ 0 ] ).toMatchObject( {
			text: 'It is one of the largest foodservice companies in Mexico according to CNN Expansión.',
			url: 'http://www.cnnexpansion.com/rankings/interactivo-las-500/2014',
			title: 'Top 10 del Ranking 2014', template: 'cite web', section: []
		} );
		expect( uses[ 3 ] ).toMatchObject( {
			text: 'In September 2013, Alsea acquired 362 Walmex restaurants Vips and El Porton for around $626 million.',
			template: 'cite news', section: [ 'Recent news' ],
			url: 'https://www.reuters.com/article/2013/09/10/us-mexico-alsea-walmex-idUSBRE9891A220130910'
		} );
		expect( uses[ 1 ] ).toMatchObject( { kind: 'external_link', title: 'Alsea. Investor Relations' } );
	} );

	it( 'finds all 687 ref uses of United Kingdom in well under a second', () => {
		const text = readArticle( 'United-Kingdom.txt' );
		const started = Date.now();
		const uses = findRefs( text );
		expect( Date.now() - started ).toBeLessThan( 2000 );
		expect( uses ).toHaveLength( 687 );
		expect( uses.filter( ( use ) => use.url ).length ).toBeGreaterThan( 500 );
	} );

	it( 'gives every use of every article valid offsets and a claim', () => {
		for ( const name of allArticles() ) {
			const text = readArticle( name );
			const uses = findRefs( text );
			let previous = -1;
			for ( const use of uses ) {
				expect( use.start ).toBeGreaterThan( previous );
				expect( text.slice( use.start, use.end ) ).toMatch( /^<ref\b[\s\S]*(<\/ref\s*>|\/>)$/i );
				expect( typeof use.text ).toBe( 'string' );
				previous = use.start;
			}
		}
	} );
} );
