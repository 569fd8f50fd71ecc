/* Pagers (templates/_pagination.html) that htmx swaps in place: the focus stays in the pager. htmx itself gives it
   back to the element with the clicked link's id when the new pager has one ("← Previous", "Next →"); otherwise
   (a page number, or "Next →" on the way to the last page) it goes to the new pager's current page, so a keyboard
   or screen-reader user is not thrown back to the top of the page. Without JavaScript the pager is plain links. */
(function () {
  "use strict";

  document.addEventListener("htmx:afterSettle", function (event) {
    var link = event.detail.requestConfig && event.detail.requestConfig.elt;
    var pager = link && link.closest ? link.closest("nav.pagination") : null;
    if (!pager || document.body.contains(pager)) return;
    if (document.activeElement && document.activeElement !== document.body) return;
    var label = pager.getAttribute("aria-label");
    document.querySelectorAll("nav.pagination").forEach(function (candidate) {
      if (candidate.getAttribute("aria-label") !== label) return;
      var current = candidate.querySelector(".page-current");
      if (current) current.focus({ preventScroll: true });
    });
  });
})();
