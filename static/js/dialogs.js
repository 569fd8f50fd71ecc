/* Dialogs opened by htmx (every action also works as a plain page without this file; the CSP allows no inline
   handlers, so closing is done here rather than in hx-on attributes):
   - a console dialog in #modal takes the focus on its first field;
   - Escape or Cancel ([data-modal-close]) closes it and gives the focus back to the button that opened it;
   - a link with data-dismiss="<selector>" empties its closest such container (the chat's "Keep it"). */
(function () {
  "use strict";

  var opener = null;

  function dialogHolder() { return document.getElementById("modal"); }

  function close() {
    var holder = dialogHolder();
    if (!holder || !holder.querySelector(".modal")) return false;
    holder.innerHTML = "";
    if (opener && document.contains(opener)) opener.focus();
    return true;
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    var target = event.detail.target;
    if (target && target.id === "modal" && !dialogHolder().contains(event.detail.elt)) opener = event.detail.elt;
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    if (!event.detail.elt || event.detail.elt.id !== "modal") return;
    var field = dialogHolder().querySelector(".modal textarea, .modal input:not([type=hidden]), .modal select");
    if (field) field.focus();
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && close()) event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest("#modal [data-modal-close]") && close()) event.preventDefault();
    var dismiss = event.target.closest("[data-dismiss]");
    var container = dismiss && dismiss.closest(dismiss.getAttribute("data-dismiss"));
    if (container) {
      event.preventDefault();
      var slot = container.id ? document.querySelector("[hx-target='#" + container.id + "']") : null;
      container.innerHTML = "";
      if (slot) slot.focus();
    }
  });
})();
