/**
 * The editors the gadget works in, behind one small interface:
 * getText(), insert( offset, text ), select( start, end ), onChange( handler ) and
 * mount( element ) to place the hints panel under the editor.
 *
 * - The source editor (WikiEditor or the plain textarea, hook "wikipage.editform") goes
 *   through jquery.textSelection, so CodeMirror and other textarea replacements that
 *   register with it are handled too.
 * - The 2017 wikitext editor (VisualEditor in source mode, hook "ve.activationComplete"):
 *   its document is one paragraph per line, so a text offset maps to a linear-model offset
 *   by adding one for the first paragraph and one per line break before it. Visual mode is
 *   side-visual.js.
 */
'use strict';

/**
 * @param {jQuery} $textarea The #wpTextbox1 textarea
 * @return {Object} Editor
 */
function textareaEditor( $textarea ) {
	return {
		mount: function ( element ) {
			// Above the summary box: WikiEditor may wrap the textarea after this runs.
			// eslint-disable-next-line es-x/no-array-prototype-find -- jQuery#find
			var $options = $textarea.closest( 'form' ).find( '.editOptions' ).first();
			if ( $options.length ) {
				$options.before( element );
			} else {
				$textarea.after( element );
			}
		},
		getText: function () {
			return $textarea.textSelection( 'getContents' );
		},
		insert: function ( offset, text ) {
			$textarea.textSelection( 'setSelection', { start: offset, end: offset } );
			$textarea.textSelection( 'replaceSelection', text );
			$textarea.trigger( 'input' );
		},
		select: function ( start, end ) {
			$textarea.trigger( 'focus' );
			$textarea.textSelection( 'setSelection', { start: start, end: end } );
			$textarea.textSelection( 'scrollToCaretPosition' );
		},
		onChange: function ( handler ) {
			$textarea.on( 'input change', handler );
		}
	};
}

/**
 * Offset in the linear model of a VE source-mode document for an offset in its text.
 *
 * @param {string} text The document as one string (lines joined with "\n")
 * @param {number} offset
 * @return {number}
 */
function linearOffset( text, offset ) {
	var before = text.slice( 0, offset ), lines = before.split( '\n' ).length - 1;
	return offset + lines + 1;
}

/**
 * @param {Object} surface ve.ui.Surface of the 2017 wikitext editor (source mode)
 * @param {Function} Range ve.Range
 * @return {Object} Editor
 */
function veSourceEditor( surface, Range ) {
	var model = surface.getModel();
	return {
		mount: function ( element ) {
			surface.$element.after( element );
		},
		getText: function () {
			return surface.getDom();
		},
		insert: function ( offset, text ) {
			var at = linearOffset( surface.getDom(), offset );
			model.getLinearFragment( new Range( at ) ).insertContent( text );
		},
		select: function ( start, end ) {
			var text = surface.getDom();
			model.setLinearSelection( new Range( linearOffset( text, start ), linearOffset( text, end ) ) );
		},
		onChange: function ( handler ) {
			model.on( 'history', handler );
		}
	};
}

module.exports = {
	textareaEditor: textareaEditor,
	veSourceEditor: veSourceEditor,
	linearOffset: linearOffset
};
