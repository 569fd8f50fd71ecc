/* The chat's small enhancements; everything works without them (and without htmx).
   - Enter sends, Shift+Enter starts a new line.
   - While a reply is pending, the sent message shows at once with a typing indicator.
   - The latest turn is in view on load, and the message box has the focus after each reply. */
(function () {
  "use strict";

  function composer() { return document.getElementById("composer"); }

  document.addEventListener("keydown", function (event) {
    var form = composer();
    if (!form || event.target !== form.querySelector("textarea")) return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (event.target.value.trim()) form.requestSubmit();
    }
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = composer();
    if (event.detail.elt !== form) return;
    var text = form.querySelector("textarea").value;
    var pending = document.createElement("li");
    pending.className = "chat-turn chat-turn-pending";
    pending.id = "turn-pending";
    var user = document.createElement("div");
    user.className = "bubble bubble-user";
    var userText = document.createElement("p");
    userText.className = "bubble-text";
    userText.textContent = text;  // textContent, never innerHTML: the message is shown as typed
    user.appendChild(userText);
    var typing = document.createElement("div");
    typing.className = "bubble bubble-assistant bubble-typing";
    typing.setAttribute("aria-label", "Writing a reply");
    typing.innerHTML = "<span></span><span></span><span></span>";
    pending.appendChild(user);
    pending.appendChild(typing);
    document.getElementById("conversation").appendChild(pending);
    pending.scrollIntoView({ block: "end" });
  });

  // The answer replaces the placeholder: drop it before the swap, or when the request failed. (The only request
  // on the chat page is the composer's; after the swap its old form is out of the page and its events are lost.)
  ["htmx:beforeSwap", "htmx:sendError", "htmx:responseError"].forEach(function (name) {
    document.addEventListener(name, function () {
      var pending = document.getElementById("turn-pending");
      if (pending) pending.remove();
    });
  });

  document.addEventListener("htmx:afterSettle", function () {
    var form = composer();
    if (form) form.querySelector("textarea").focus();
  });

  document.addEventListener("DOMContentLoaded", function () {
    var form = composer();
    if (!form) return;
    var target = (location.hash && document.getElementById(location.hash.slice(1))) ||
      document.querySelector("#conversation > .chat-turn:last-child");
    if (target) target.scrollIntoView({ block: "end" });
    form.querySelector("textarea").focus();
  });
})();
