// Copy buttons for suggested citations. The page works without this script: the citation
// sits in a read-only textarea that can be selected and copied by hand.
(function () {
	'use strict';
	document.addEventListener('click', function (event) {
		var button = event.target.closest('button.copy');
		if (!button) {
			return;
		}
		var field = document.getElementById(button.getAttribute('data-copy'));
		if (!field) {
			return;
		}
		field.select();
		// The labels come from the page, in its language.
		var label = button.getAttribute('data-label') || button.textContent;
		button.setAttribute('data-label', label);
		var done = function () {
			button.textContent = button.getAttribute('data-copied') || 'Copied';
			button.classList.add('done');
			setTimeout(function () {
				button.textContent = label;
				button.classList.remove('done');
			}, 1500);
		};
		if (navigator.clipboard && window.isSecureContext) {
			navigator.clipboard.writeText(field.value).then(done, function () {
				document.execCommand('copy');
				done();
			});
		} else {
			document.execCommand('copy');
			done();
		}
	});
}());
