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
		var done = function () {
			button.textContent = 'Copied';
			button.classList.add('done');
			setTimeout(function () {
				button.textContent = 'Copy';
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
