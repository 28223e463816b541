/* "bars": the total time in each function per variant side by side, the largest first; a
 * function only one variant called is marked in its label.
 * data: {unit, functions: [], variants: [], totals: [[per variant, null: not called]],
 *        counts: [[...]], only: [variant or null]} */
(function (cutaway) {
  'use strict';
  cutaway.draw.bars = function (element, data) {
    var rowHeight = 10 + 14 * data.variants.length;
    element.style.height = (110 + rowHeight * data.functions.length) + 'px';
    var chart = echarts.init(element, null, {renderer: 'canvas'});
    var labels = data.functions.map(function (name, i) {
      return data.only[i] === null ? name : name + '  \u25c6 only ' + data.only[i];
    });
    var series = data.variants.map(function (variant, v) {
      return {
        type: 'bar', name: variant, color: cutaway.color(v),
        data: data.totals.map(function (row) { return row[v]; }),
        barMaxWidth: 14
      };
    });
    var option = cutaway.base();
    option.grid.top = 40;
    option.tooltip.trigger = 'axis';
    option.tooltip.axisPointer = {type: 'shadow'};
    option.tooltip.formatter = function (params) {
      var index = params[0].dataIndex;
      var lines = [labels[index]];
      data.variants.forEach(function (variant, v) {
        var total = data.totals[index][v];
        lines.push(variant + ': ' + (total === null ? 'not called'
          : cutaway.withUnit(total, data.unit) + ' in ' + data.counts[index][v] + ' calls'));
      });
      return cutaway.tip(lines);
    };
    option.xAxis = {type: 'value', name: cutaway.axisName('total time', data.unit),
                    nameLocation: 'middle', nameGap: 28};
    option.yAxis = {type: 'category', data: labels, inverse: true,
                    axisLabel: {width: 260, overflow: 'truncate'}};
    option.series = series;
    chart.setOption(option);
    return chart;
  };
}(window.cutaway));
