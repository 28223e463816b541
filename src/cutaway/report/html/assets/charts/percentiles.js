/* "percentiles": the percentile curve (CDF) of each series, value across, percentile up; a
 * series with a `position` (the calls probe) is dashed by position and coloured by variant.
 * data: {metric, unit, log, series: [{name, percentiles: [], values: [], variant?, position?}]} */
(function (cutaway) {
  'use strict';
  var DASH = {'1': 'solid', '2': 'dashed', 'later': 'dotted'};
  cutaway.draw.percentiles = function (element, data) {
    element.style.height = '380px';
    var chart = echarts.init(element, null, {renderer: 'canvas'});
    var series = data.series.map(function (s, index) {
      var points = s.values.map(function (value, i) { return [value, s.percentiles[i]]; });
      var color = cutaway.color(s.variant === undefined ? index : s.variant);
      return {
        type: 'line', name: s.name, data: points, color: color, showSymbol: points.length <= 3,
        step: points.length < 100 ? 'end' : false,
        lineStyle: {width: 1.8, type: DASH[s.position] || 'solid'}
      };
    });
    var option = cutaway.base();
    option.tooltip.trigger = 'axis';
    option.tooltip.axisPointer = {type: 'line', axis: 'y'};
    option.tooltip.formatter = function (params) {
      var lines = ['p' + cutaway.number(params[0].value[1])];
      params.forEach(function (p) {
        lines.push(p.seriesName + ': ' + cutaway.withUnit(p.value[0], data.unit) +
                   ' (p' + cutaway.number(p.value[1]) + ')');
      });
      return cutaway.tip(lines);
    };
    option.xAxis = {type: data.log ? 'log' : 'value', scale: true,
                    name: cutaway.axisName(data.metric, data.unit) + (data.log ? ', log scale' : ''),
                    nameLocation: 'middle', nameGap: 28};
    option.grid.top = 56;
    option.yAxis = {type: 'value', min: 0, max: 100, name: 'percentile', nameTextStyle: {align: 'left'}};
    option.series = series;
    chart.setOption(option);
    return chart;
  };
}(window.cutaway));
