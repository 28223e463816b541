/* "attribution": the "thousand cuts" curve. Across, the number of functions counted, the
 * largest self change first, on a log axis; up, their summed change as a share of the
 * whole-process difference, 100 % (the whole difference) dashed. One cause jumps to 100 % at
 * the first function; a thousand cuts climb slowly.
 * data: {what, unit, series: [{name, functions: [], shares: [% or null], changes: []}]} */
(function (cutaway) {
  'use strict';
  cutaway.draw.attribution = function (element, data) {
    element.style.height = '360px';
    var chart = echarts.init(element, null, {renderer: 'canvas'});
    var most = 1;
    var series = data.series.map(function (s, index) {
      var points = [];
      s.functions.forEach(function (count, i) {
        most = Math.max(most, count);
        if (s.shares[i] !== null) { points.push([count, s.shares[i], s.changes[i]]); }
      });
      var color = cutaway.color(index + 1);
      var item = {
        type: 'line', name: s.name, data: points, color: color, showSymbol: true,
        symbolSize: 6, lineStyle: {width: 1.8}
      };
      if (index === 0) {
        item.markLine = {
          silent: true, symbol: 'none', label: {show: false},
          lineStyle: {color: '#555', type: 'dashed', width: 1},
          data: [{yAxis: 100}]
        };
      }
      return item;
    });
    var option = cutaway.base();
    option.tooltip.trigger = 'item';
    option.tooltip.formatter = function (p) {
      var count = p.value[0];
      var change = p.value[2];
      return cutaway.tip([
        p.seriesName,
        'the ' + (count === 1 ? 'largest change' : cutaway.number(count) + ' largest changes'),
        (change > 0 ? '+' : '') + cutaway.withUnit(change, data.unit) + ' per run',
        cutaway.number(p.value[1]) + ' % of the difference'
      ]);
    };
    option.xAxis = {type: 'log', logBase: 10, min: 1, max: Math.max(10, most),
                    name: 'functions counted, largest change first (log scale)',
                    nameLocation: 'middle', nameGap: 28};
    option.grid.top = 56;
    /* 0 and 100 % always in view (how far the curve is from the whole difference shows),
     * through an invisible series, so that the axis still picks round ticks. */
    series.push({type: 'scatter', data: [[1, 0], [1, 100]], symbolSize: 0, silent: true,
                 tooltip: {show: false}, z: -1});
    option.legend.data = data.series.map(function (s) { return s.name; });
    option.yAxis = {type: 'value', name: data.what + ': share of the difference (%)',
                    nameTextStyle: {align: 'left'}};
    option.series = series;
    chart.setOption(option);
    return chart;
  };
}(window.cutaway));
