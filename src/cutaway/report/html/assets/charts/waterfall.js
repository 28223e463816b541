/* "waterfall": the spans probe's phases as a waterfall, one row per phase (indented under its
 * parent), each bar starting where the phases before it end within its parent; one bar per
 * column (variant x condition) per phase.
 * data: {unit, phases: [], columns: [], offsets: [[per column, null: absent]],
 *        values: [[per column]]} */
(function (cutaway) {
  'use strict';
  cutaway.draw.waterfall = function (element, data) {
    var rowHeight = 10 + 14 * data.columns.length;
    element.style.height = (110 + rowHeight * data.phases.length) + 'px';
    var chart = echarts.init(element, null, {renderer: 'canvas'});
    var series = [];
    data.columns.forEach(function (column, c) {
      var stack = 'column' + c;
      series.push({
        type: 'bar', name: column + ' (offset)', stack: stack, silent: true,
        itemStyle: {color: 'transparent'}, tooltip: {show: false},
        data: data.offsets.map(function (row) { return row[c]; }), barMaxWidth: 14
      });
      series.push({
        type: 'bar', name: column, stack: stack, color: cutaway.color(c),
        data: data.values.map(function (row) { return row[c]; }), barMaxWidth: 14
      });
    });
    var option = cutaway.base();
    option.grid.top = 40;
    option.legend.data = data.columns;
    option.tooltip.trigger = 'item';
    option.tooltip.formatter = function (params) {
      var c = Math.floor(params.seriesIndex / 2);
      var i = params.dataIndex;
      return cutaway.tip([
        data.phases[i].trim(), data.columns[c] + ': ' + cutaway.withUnit(data.values[i][c], data.unit)
          + ' per operation, from ' + cutaway.withUnit(data.offsets[i][c], data.unit)
      ]);
    };
    option.xAxis = {type: 'value', name: cutaway.axisName('time per operation', data.unit),
                    nameLocation: 'middle', nameGap: 28};
    // Labels left-aligned, their leading spaces kept (non-breaking): the nesting shows.
    var labels = data.phases.map(function (name) {
      var indent = name.length - name.replace(/^ +/, '').length;
      return '\u00a0'.repeat(indent * 2) + name.slice(indent);
    });
    option.grid.left = 280;
    option.grid.containLabel = false;
    option.yAxis = {type: 'category', data: labels, inverse: true,
                    axisLabel: {width: 260, overflow: 'truncate', align: 'left', margin: 270}};
    option.series = series;
    chart.setOption(option);
    return chart;
  };
}(window.cutaway));
