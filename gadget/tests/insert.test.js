'use strict';

const { findRefs } = require( '../src/side-refs.js' );
const { citeWeb, isoDate, planInsertion, applyInsertion } = require( '../src/side-insert.js' );
const { describeWithData, readArticle } = require( './helpers/fixtures.js' );

const TODAY = new Date( Date.UTC( 2026, 10, 22 ) );
const TEXT = 'Alsea runs Starbucks in Mexico.<ref name="a">[https://example.org/weak Weak source]</ref> ' +
	'It has 60,000 employees.<ref>{{cite web |url=https://example.org/good |title=Good}}</ref>\n\n' +
	'Again in Mexico.<ref name="a" /><ref>https://example.org/other</ref> End.';
const SUGGESTION = { url: 'https://news.example.org/alsea', title: 'Alsea | Starbucks deal',
	cite: '{{cite web |url=https://news.example.org/alsea |title=Alsea {{!}} Starbucks deal |access-date=2026-11-20}}' };

describe( 'citeWeb', () => {
	it( 'uses the citation the service wrote', () => {
		expect( citeWeb( SUGGESTION, TODAY ) ).toBe( SUGGESTION.cite );
	} );

	it( 'builds a {{cite web}} when there is none, escaping pipes and braces', () => {
		expect( citeWeb( { url: 'https://x.example.org/a', title: 'A | [B] }} C\nD' }, TODAY ) ).toBe(
			'{{cite web |url=https://x.example.org/a |title=A {{!}} &#91;B&#93; &#125;&#125; C D |access-date=2026-11-22}}' );
		expect( citeWeb( { url: 'https://x.example.org/a', cite: 'not a template' }, TODAY ) ).toBe(
			'{{cite web |url=https://x.example.org/a |access-date=2026-11-22}}' );
		expect( isoDate( new Date( Date.UTC( 2027, 0, 5 ) ) ) ).toBe( '2027-01-05' );
	} );

	it( 'escapes refs, links, templates and signatures in a title, and percent-encodes the URL', () => {
		const hostile = { url: 'https://x.example.org/a|b c?d={{e}}&f=[g]<h>~~~~',
			title: 'T</ref><ref>[[Page|x]] {{!}} {{cite news}} ~~~~' };
		expect( citeWeb( hostile, TODAY ) ).toBe( '{{cite web ' +
			'|url=https://x.example.org/a%7Cb%20c?d=%7B%7Be%7D%7D&f=%5Bg%5D%3Ch%3E%7E%7E%7E%7E ' +
			'|title=T&lt;/ref&gt;&lt;ref&gt;&#91;&#91;Page{{!}}x&#93;&#93; &#123;&#123;!&#125;&#125; ' +
			'&#123;&#123;cite news&#125;&#125; &#126;&#126;&#126;&#126; |access-date=2026-11-22}}' );
	} );

	it( 'rebuilds a service citation that is more than one {{cite web}}', () => {
		const built = '{{cite web |url=https://x.example.org/a |title=T |access-date=2026-11-22}}';
		[
			'{{cite web |url=https://x.example.org/a}}</ref><ref>{{cite web |url=https://evil.example}}',
			'{{cite web |url=https://x.example.org/a}} {{delete}}',
			'{{cite web |url=https://x.example.org/a |title=[[Main Page]]}}',
			'{{cite web |url=https://x.example.org/a |title=~~~~}}',
			'{{cite web |url=https://x.example.org/a |title={{x}}',
			'{{delete}}'
		].forEach( ( cite ) => {
			expect( citeWeb( { url: 'https://x.example.org/a', title: 'T', cite: cite }, TODAY ) ).toBe( built );
		} );
	} );
} );

describe( 'planInsertion', () => {
	const uses = findRefs( TEXT );

	it( 'inserts a new ref right after the weak citation, which stays', () => {
		const plan = planInsertion( TEXT, uses[ 0 ].key, SUGGESTION, TODAY );
		expect( plan.offset ).toBe( uses[ 0 ].end );
		const after = applyInsertion( TEXT, plan );
		expect( after ).toBe( TEXT.replace( 'Weak source]</ref> ', `Weak source]</ref><ref>${ SUGGESTION.cite }</ref> ` ) );
		const again = findRefs( after );
		expect( again ).toHaveLength( uses.length + 1 );
		expect( again[ 1 ] ).toMatchObject( { url: SUGGESTION.url, text: 'Alsea runs Starbucks in Mexico.' } );
		// The weak citation keeps its key, so its hint stays attached to it.
		expect( again[ 0 ].key ).toBe( uses[ 0 ].key );
	} );

	it( 'inserts after a self-closing reuse of a named ref', () => {
		const plan = planInsertion( TEXT, uses[ 2 ].key, SUGGESTION, TODAY );
		expect( TEXT.slice( 0, plan.offset ).endsWith( '<ref name="a" />' ) ).toBe( true );
	} );

	it( 'finds the citation again after other edits moved it', () => {
		const edited = 'New first paragraph.\n\n' + TEXT;
		const plan = planInsertion( edited, uses[ 1 ].key, SUGGESTION, TODAY );
		expect( edited.slice( plan.offset - 6, plan.offset ) ).toBe( '</ref>' );
		expect( plan.offset ).toBe( uses[ 1 ].end + 'New first paragraph.\n\n'.length );
	} );

	it( 'refuses when the citation is gone or the source is already there', () => {
		expect( planInsertion( TEXT.replace( 'Starbucks', 'Burger King' ), uses[ 0 ].key, SUGGESTION ) )
			.toEqual( { error: 'missing' } );
		const once = applyInsertion( TEXT, planInsertion( TEXT, uses[ 0 ].key, SUGGESTION, TODAY ) );
		expect( planInsertion( once, uses[ 0 ].key, SUGGESTION, TODAY ) ).toEqual( { error: 'duplicate' } );
		expect( planInsertion( TEXT, uses[ 2 ].key, { url: 'https://example.org/other' } ) )
			.toEqual( { error: 'duplicate' } );
	} );
} );

describe( 'planInsertion of one of the article\'s own sources', () => {
	const uses = findRefs( TEXT );
	const reuse = ( url, name ) => ( { url, title: 'Good', score: 0.9, origin: 'article', reuse_ref: name,
		cite: `<ref name="${ name }" />` } );

	it( 'reuses a named ref by its name, adding no {{cite web}}', () => {
		const plan = planInsertion( TEXT, uses[ 3 ].key, reuse( 'https://example.org/weak', 'a' ), TODAY );
		const after = applyInsertion( TEXT, plan );
		expect( after ).toBe( TEXT.replace( '<ref>https://example.org/other</ref>',
			'<ref>https://example.org/other</ref><ref name="a" />' ) );
		expect( after ).not.toMatch( /cite web \|url=https:\/\/example\.org\/weak/ );
	} );

	it( 'names an unnamed ref as the service proposed, then reuses it', () => {
		const plan = planInsertion( TEXT, uses[ 0 ].key, reuse( 'https://example.org/good', 'Good-2020' ), TODAY );
		expect( plan.edits ).toHaveLength( 2 );
		const after = applyInsertion( TEXT, plan );
		expect( after ).toBe( TEXT
			.replace( 'Weak source]</ref> ', 'Weak source]</ref><ref name="Good-2020" /> ' )
			.replace( '<ref>{{cite web |url=https://example.org/good', '<ref name="Good-2020">{{cite web |url=https://example.org/good' ) );
		const again = findRefs( after );
		expect( again.filter( ( use ) => use.url === 'https://example.org/good' ).map( ( use ) => use.name ) )
			.toEqual( [ 'Good-2020', 'Good-2020' ] );
		// The weak citation keeps its key, so its hint stays attached to it.
		expect( again[ 0 ].key ).toBe( uses[ 0 ].key );
	} );

	it( 'reuses the name the ref has now when it was named since the check', () => {
		const named = TEXT.replace( '<ref>{{cite web', '<ref name="g">{{cite web' );
		const plan = planInsertion( named, findRefs( named )[ 0 ].key, reuse( 'https://example.org/good', 'Good-2020' ), TODAY );
		expect( plan.edits ).toHaveLength( 1 );
		expect( plan.text ).toBe( '<ref name="g" />' );
	} );

	it( 'refuses when the source is no longer in the text, or already there', () => {
		expect( planInsertion( TEXT, uses[ 0 ].key, reuse( 'https://example.org/gone', 'Gone' ), TODAY ) )
			.toEqual( { error: 'missing' } );
		expect( planInsertion( TEXT, uses[ 2 ].key, reuse( 'https://example.org/other', 'x' ), TODAY ) )
			.toEqual( { error: 'duplicate' } );
	} );
} );

describeWithData( 'planInsertion on a real article', () => {
	it( 'changes nothing but the inserted citation', () => {
		const text = readArticle( 'Alsea-(company).txt' );
		const uses = findRefs( text );
		const plan = planInsertion( text, uses[ 2 ].key, SUGGESTION, TODAY );
		const after = applyInsertion( text, plan );
		expect( after.length ).toBe( text.length + plan.text.length );
		expect( after.slice( 0, plan.offset ) ).toBe( text.slice( 0, plan.offset ) );
		expect( after.slice( plan.offset + plan.text.length ) ).toBe( text.slice( plan.offset ) );
		expect( text.slice( uses[ 2 ].start, plan.offset ) ).toMatch( /^<ref> \[http:\/\/ww\.alsea\.net.*<\/ref>$/ );
		expect( findRefs( after ).map( ( use ) => use.url ) ).toEqual( [
			...uses.slice( 0, 3 ).map( ( use ) => use.url ), SUGGESTION.url, uses[ 3 ].url ] );
	} );
} );
