/* cutaway's HTML report: draws each <figure data-figure="N"> from the embedded JSON document
 * (the element #cutaway-data) with the renderer of its kind, registered by assets/charts/*.js
 * in cutaway.draw. Figures are drawn when they come near the viewport.
 *
 * Safety: data is text, never markup. Every string from the data reaches the page through
 * textContent (tooltips are DOM nodes built here) or through the chart library's canvas text;
 * no renderer sets innerHTML, and no ECharts formatter is a template string. */
(function () {
  'use strict';
  var PALETTE = ['#4c72b0', '#dd8452', '#55a868', '#c44e52', '#8172b3', '#937860',
                 '#da8bc3', '#8c8c8c', '#ccb974', '#64b5cd'];
  var cutaway = {
    draw: {},
    charts: [],
    drawn: 0,
    failed: [],
    firstDrawnAt: null,  /* ms since navigation: when the first chart was drawn (bench/) */
    color: function (index) { return PALETTE[index % PALETTE.length]; },
    /* 3 significant digits, no exponent for ordinary values: "0.677", "1,230". */
    number: function (value) {
      if (value === null || value === undefined || !isFinite(value)) { return 'n/a'; }
      var rounded = Number(Number(value).toPrecision(3));
      return Math.abs(rounded) >= 1e6 || (rounded !== 0 && Math.abs(rounded) < 1e-3)
        ? rounded.toExponential(2) : rounded.toLocaleString('en-US', {maximumFractionDigits: 6});
    },
    withUnit: function (value, unit) {
      return cutaway.number(value) + (unit ? ' ' + unit : '');
    },
    /* A tooltip as DOM nodes: one line per entry of `lines`, each set as text. */
    tip: function (lines) {
      var box = document.createElement('div');
      box.className = 'tip';
      lines.forEach(function (line, index) {
        var row = document.createElement('div');
        row.textContent = line;
        if (index === 0) { row.className = 'tip-title'; }
        box.appendChild(row);
      });
      return box;
    },
    /* Options every chart shares. */
    base: function () {
      return {
        animation: false,
        textStyle: {fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'},
        grid: {left: 16, right: 28, top: 36, bottom: 48, containLabel: true},
        tooltip: {confine: true, renderMode: 'html', appendToBody: false},
        legend: {type: 'scroll', top: 4}
      };
    },
    axisName: function (name, unit) { return unit ? name + ' (' + unit + ')' : name; }
  };

  function figureData() {
    var element = document.getElementById('cutaway-data');
    return JSON.parse(element.textContent).figures;
  }

  function drawFigure(figure, figures) {
    if (figure.getAttribute('data-state')) { return; }
    var spec = figures[Number(figure.getAttribute('data-figure'))];
    var target = figure.querySelector('.chart');
    try {
      var draw = cutaway.draw[spec.kind];
      if (!draw) { throw new Error('no renderer for ' + spec.kind); }
      var chart = draw(target, spec.data);
      cutaway.charts.push(chart);
      figure.setAttribute('data-state', 'drawn');
      cutaway.drawn += 1;
      if (cutaway.firstDrawnAt === null) { cutaway.firstDrawnAt = performance.now(); }
    } catch (error) {
      figure.setAttribute('data-state', 'failed');
      target.textContent = 'This chart could not be drawn: ' + error;
      cutaway.failed.push(String(error));
      console.error(error);
    }
  }

  cutaway.start = function () {
    var figures = figureData();
    var elements = Array.prototype.slice.call(document.querySelectorAll('figure[data-figure]'));
    cutaway.drawAll = function () {
      elements.forEach(function (f) { drawFigure(f, figures); });
      return {drawn: cutaway.drawn, failed: cutaway.failed.length, figures: elements.length};
    };
    if ('IntersectionObserver' in window) {
      /* One chart per frame: the first in view appears after its own drawing time, not
       * after that of every chart the margin brought in. */
      var queue = [];
      var drawNext = function () {
        var next = queue.shift();
        if (next) {
          drawFigure(next, figures);
          requestAnimationFrame(drawNext);
        }
      };
      var observer = new IntersectionObserver(function (entries) {
        entries.forEach(function (entry) {
          if (entry.isIntersecting) {
            observer.unobserve(entry.target);
            if (queue.push(entry.target) === 1) { requestAnimationFrame(drawNext); }
          }
        });
      }, {rootMargin: '400px 0px'});
      elements.forEach(function (f) { observer.observe(f); });
    } else {
      cutaway.drawAll();
    }
    window.addEventListener('resize', function () {
      cutaway.charts.forEach(function (chart) { chart.resize(); });
    });
    window.addEventListener('beforeprint', cutaway.drawAll);
  };
  window.cutaway = cutaway;
}());
