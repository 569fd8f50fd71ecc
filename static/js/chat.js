/* The chat's small enhancements; everything works without them (and without htmx).
   - Enter sends, Shift+Enter starts a new line.
   - While a reply is pending, the sent message shows at once with a typing indicator, above the message box.
   - When sending fails (no connection, an aborted request, a server error), the sent message stays with an error
     and a Retry button. Retry sends the same form again with the same idempotency key, so the server answers it
     once even if the first attempt did arrive; `retry=1` asks it to show that earlier answer if it exists.
   - A live character counter matches the box's maxlength (MEMORY_MESSAGE_MAX_CHARS).
   - The latest turn is in view on load, and the message box has the focus after each reply. */
(function () {
  "use strict";

  function composer() { return document.getElementById("composer"); }
  function pendingTurn() { return document.getElementById("turn-pending"); }

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;  // textContent, never innerHTML: what users typed stays text
    return node;
  }

  function countUpdate() {
    var form = composer();
    var counter = document.getElementById("composer-count");
    if (!form || !counter) return;
    var box = form.querySelector("textarea");
    var max = parseInt(counter.getAttribute("data-max"), 10) || box.maxLength;
    var used = box.value.length;
    counter.textContent = used.toLocaleString() + " / " + max.toLocaleString() + " characters";
    counter.classList.toggle("is-near", used >= max * 0.9 && used < max);
    counter.classList.toggle("is-over", used >= max);
  }

  document.addEventListener("keydown", function (event) {
    var form = composer();
    if (!form || event.target !== form.querySelector("textarea")) return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (event.target.value.trim()) form.requestSubmit();
    }
  });

  document.addEventListener("input", function (event) {
    var form = composer();
    if (form && event.target === form.querySelector("textarea")) countUpdate();
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = composer();
    if (event.detail.elt !== form) return;
    var text = form.querySelector("textarea").value;
    var old = pendingTurn();
    if (old) old.remove();  // a failed attempt being retried
    form.setAttribute("data-sent", text);
    var pending = element("li", "chat-turn chat-turn-pending");
    pending.id = "turn-pending";
    var user = element("div", "bubble bubble-user");
    var userText = element("p", "bubble-text", text);
    userText.setAttribute("dir", "auto");
    user.appendChild(userText);
    var typing = element("div", "bubble bubble-assistant bubble-typing");
    typing.setAttribute("role", "status");
    typing.appendChild(element("span", "visually-hidden", "Writing a reply"));
    for (var i = 0; i < 3; i++) typing.appendChild(element("span", "dot"));
    pending.appendChild(user);
    pending.appendChild(typing);
    document.getElementById("conversation").appendChild(pending);
    pending.scrollIntoView({ block: "end" });  // its scroll-margin keeps it above the sticky message box
  });

  function sendFailed(message, canRetry) {
    var pending = pendingTurn();
    var form = composer();
    if (!pending || !form) return;
    pending.classList.remove("chat-turn-pending");
    pending.classList.add("chat-turn-failed");
    var typing = pending.querySelector(".bubble-typing");
    if (typing) typing.remove();
    var error = element("div", "send-error form-errors");
    error.setAttribute("role", "alert");
    error.appendChild(element("p", "", message));
    if (canRetry) {
      var retry = element("button", "button button-small", "Retry");
      retry.type = "button";
      retry.setAttribute("data-retry", "");
      error.appendChild(retry);
    }
    pending.appendChild(error);
    pending.scrollIntoView({ block: "end" });
    if (canRetry) retry.focus();
  }

  document.addEventListener("click", function (event) {
    if (!event.target.closest("[data-retry]")) return;
    var form = composer();
    if (!form) return;
    form.querySelector("textarea").value = form.getAttribute("data-sent") || form.querySelector("textarea").value;
    var flag = form.querySelector("input[name=retry]");
    if (!flag) {
      flag = element("input");
      flag.type = "hidden";
      flag.name = "retry";
      form.appendChild(flag);
    }
    flag.value = "1";
    countUpdate();
    form.requestSubmit();  // the same form, so the same idempotency key
  });

  // A failed request keeps the sent message with an error; any answer that is swapped in replaces it.
  // (The only request on the chat page is the composer's; after the swap its old form is out of the page.)
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (!event.detail.shouldSwap) return;
    var pending = pendingTurn();
    if (pending) pending.remove();
  });

  document.addEventListener("htmx:sendError", function () {
    sendFailed("Not sent: the connection failed. Your message is kept; nothing is stored twice if you retry.", true);
  });

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    if (xhr.status === 410) {  // the account was closed: retrying cannot help
      sendFailed(xhr.responseText || "This account has been closed.", false);
    } else {
      sendFailed("Not sent: the server answered with an error (" + xhr.status + "). Your message is kept.", true);
    }
  });

  document.addEventListener("htmx:afterSettle", function () {
    var form = composer();
    if (!form) return;
    form.querySelector("textarea").focus();
    countUpdate();
  });

  document.addEventListener("DOMContentLoaded", function () {
    var form = composer();
    if (!form) return;
    var target = (location.hash && document.getElementById(location.hash.slice(1))) ||
      document.querySelector("#conversation > .chat-turn:last-child");
    if (target) target.scrollIntoView({ block: "end" });
    form.querySelector("textarea").focus();
    countUpdate();
  });
})();
