/* Copy buttons: <button data-copy="#field" hidden> next to a readonly field. Without JS the button stays hidden
   and the field's text can be selected and copied by hand; with JS the button shows and copies the field's value. */
(function () {
  "use strict";

  function reveal() {
    document.querySelectorAll("button[data-copy][hidden]").forEach(function (button) { button.hidden = false; });
  }

  function copied(button, text) {
    var status = button.parentElement.querySelector(".copy-status");
    if (status) status.textContent = text;
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button) return;
    var field = document.querySelector(button.getAttribute("data-copy"));
    if (!field) return;
    field.select();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(
        function () { copied(button, "Copied."); },
        function () { copied(button, document.execCommand("copy") ? "Copied." : "Selected: press Ctrl+C to copy."); }
      );
    } else {
      copied(button, document.execCommand("copy") ? "Copied." : "Selected: press Ctrl+C to copy.");
    }
  });

  document.addEventListener("DOMContentLoaded", reveal);
  document.addEventListener("htmx:afterSettle", reveal);  // a token created through htmx arrives in a swap
})();
