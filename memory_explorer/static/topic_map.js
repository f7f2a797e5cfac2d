// The topic map: hover shows a topic's label, size and strongest concepts; a click opens the topic (each
// circle is a link); the wheel zooms around the pointer, a drag pans; labels are shown largest topic first
// wherever they do not overlap one already shown, again after every zoom (labels keep their screen size).
(function () {
  "use strict";
  var svg = document.getElementById("topic-map");
  if (!svg) { return; }
  var viewport = svg.querySelector(".viewport");
  var tip = document.getElementById("map-tip");
  var labels = Array.prototype.slice.call(svg.querySelectorAll("text.lbl"));
  var view = { k: 1, x: 0, y: 0 };
  svg.classList.add("scripted");

  function apply() {
    viewport.setAttribute("transform", "translate(" + view.x + " " + view.y + ") scale(" + view.k + ")");
    labels.forEach(function (t) {
      t.setAttribute("font-size", (11 / view.k).toFixed(2));
      t.style.strokeWidth = (3 / view.k).toFixed(2) + "px";
    });
    placeLabels();
  }

  function placeLabels() {
    // labels arrive largest topic first (the server's order); keep each that overlaps none kept before
    var kept = [];
    var box = svg.getBoundingClientRect();
    labels.forEach(function (t) {
      t.classList.remove("hidden");
      var b = t.getBoundingClientRect();
      var inside = b.right > box.left && b.left < box.right && b.bottom > box.top && b.top < box.bottom;
      var clash = !inside || kept.some(function (k) {
        return b.left < k.right + 2 && b.right > k.left - 2 && b.top < k.bottom && b.bottom > k.top;
      });
      if (clash) { t.classList.add("hidden"); } else { kept.push(b); }
    });
  }

  function point(evt) {
    var p = svg.createSVGPoint();
    p.x = evt.clientX; p.y = evt.clientY;
    return p.matrixTransform(svg.getScreenCTM().inverse());
  }

  svg.addEventListener("wheel", function (evt) {
    evt.preventDefault();
    var p = point(evt);
    var factor = evt.deltaY < 0 ? 1.25 : 0.8;
    var k = Math.min(40, Math.max(1, view.k * factor));
    factor = k / view.k;
    view.x = p.x - (p.x - view.x) * factor;
    view.y = p.y - (p.y - view.y) * factor;
    view.k = k;
    if (k === 1) { view.x = 0; view.y = 0; }
    apply();
  }, { passive: false });

  var drag = null;
  svg.addEventListener("pointerdown", function (evt) {
    if (evt.button !== 0) { return; }
    drag = { start: point(evt), x: view.x, y: view.y, moved: false };
  });
  window.addEventListener("pointermove", function (evt) {
    if (!drag) { return; }
    var p = point(evt);
    var dx = p.x - drag.start.x, dy = p.y - drag.start.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; svg.style.cursor = "grabbing"; }
    view.x = drag.x + dx; view.y = drag.y + dy;
    viewport.setAttribute("transform", "translate(" + view.x + " " + view.y + ") scale(" + view.k + ")");
  });
  window.addEventListener("pointerup", function () {
    if (drag && drag.moved) { placeLabels(); }
    svg.style.cursor = "";
    window.setTimeout(function () { drag = null; }, 0);
  });
  svg.addEventListener("click", function (evt) {
    if (drag && drag.moved) { evt.preventDefault(); }  // the end of a pan is no click on a topic
  }, true);

  svg.querySelectorAll("a.topic").forEach(function (a) {
    a.addEventListener("pointerenter", function () {
      var concepts = a.getAttribute("data-concepts");
      var conversations = a.getAttribute("data-conversations");
      tip.textContent = "";
      var title = document.createElement("b");
      title.textContent = a.getAttribute("data-label");
      tip.appendChild(title);
      tip.appendChild(document.createTextNode(a.getAttribute("data-size") + " segments" +
        (conversations ? " in " + conversations + " conversations" : "")));
      if (concepts) {
        var list = document.createElement("div");
        list.textContent = concepts;
        tip.appendChild(list);
      }
      tip.hidden = false;
    });
    a.addEventListener("pointermove", function (evt) {
      var box = svg.parentNode.getBoundingClientRect();
      tip.style.left = (evt.clientX - box.left + 14) + "px";
      tip.style.top = (evt.clientY - box.top + 14) + "px";
    });
    a.addEventListener("pointerleave", function () { tip.hidden = true; });
  });

  window.addEventListener("resize", placeLabels);
  apply();
}());
