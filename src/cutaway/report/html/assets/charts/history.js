/* "history": one metric of one experiment name over its experiments (by version), each
 * variant a line of its values (medians, or ratios to a reference) with its 95 % interval as a
 * band; each change point a vertical line at the first experiment after the step, labelled
 * with its size and its triage state; each change of the machine a dashed grey line.
 * data: {metric, unit, better, labels: [version per experiment], experiments: [id],
 *        series: [{name, points: [{x, value, low, high, version, experiment, n}]}],
 *        steps: [{series, x, relative (%), worse, triage, id}], machine: [{x, keys}]} */
(function (cutaway) {
  'use strict';
  cutaway.draw.history = function (element, data) {
    element.style.height = '380px';
    var chart = echarts.init(element, null, {renderer: 'canvas'});
    var count = data.labels.length;
    function column(points, key) {
      var values = [];
      for (var i = 0; i < count; i += 1) { values.push(null); }
      points.forEach(function (p) { values[p.x] = p[key]; });
      return values;
    }
    var series = [];
    data.series.forEach(function (s, index) {
      var color = cutaway.color(index);
      var low = column(s.points, 'low');
      var high = column(s.points, 'high');
      var width = high.map(function (h, i) {
        return h === null || low[i] === null ? null : h - low[i];
      });
      /* The band: the low bound (invisible) with the width stacked on it, filled. */
      series.push({type: 'line', name: s.name, data: low, stack: 'band' + index,
                   lineStyle: {opacity: 0}, symbol: 'none', silent: true,
                   tooltip: {show: false}, color: color, connectNulls: true});
      series.push({type: 'line', name: s.name, data: width, stack: 'band' + index,
                   lineStyle: {opacity: 0}, symbol: 'none', silent: true,
                   tooltip: {show: false}, areaStyle: {color: color, opacity: 0.15},
                   color: color, connectNulls: true});
      var steps = data.steps.filter(function (step) { return step.series === index; });
      series.push({
        type: 'line', name: s.name, data: column(s.points, 'value'), color: color,
        showSymbol: count <= 200, symbolSize: 6, lineStyle: {width: 2}, connectNulls: true,
        markLine: {
          silent: false, symbol: 'none',
          data: steps.map(function (step) {
            var size = (step.relative > 0 ? '+' : '') + cutaway.number(step.relative) + ' %';
            return {
              xAxis: step.x,
              lineStyle: {color: step.worse && !step.triage ? '#c44e52' : '#555',
                          type: 'solid', width: 2},
              label: {formatter: size + (step.triage ? ' (' + step.triage + ')' : ' (not triaged)'),
                      position: 'insideEndTop', color: '#222'}
            };
          })
        }
      });
    });
    if (data.machine.length && series.length) {
      series.push({
        type: 'line', name: 'machine changed', data: [], color: '#888',
        markLine: {
          silent: true, symbol: 'none',
          lineStyle: {color: '#888', type: 'dashed', width: 1},
          label: {formatter: 'machine', position: 'insideStartTop', color: '#666'},
          data: data.machine.map(function (m) { return {xAxis: m.x}; })
        }
      });
    }
    var option = cutaway.base();
    option.legend.data = data.series.map(function (s) { return s.name; });
    option.tooltip.trigger = 'axis';
    option.tooltip.formatter = function (params) {
      var x = params[0].dataIndex;
      var lines = ['#' + data.experiments[x] + ' ' + data.labels[x]];
      data.series.forEach(function (s) {
        s.points.forEach(function (p) {
          if (p.x === x) {
            lines.push(s.name + ': ' + cutaway.withUnit(p.value, data.unit) + ' [' +
                       cutaway.number(p.low) + ', ' + cutaway.number(p.high) + '], n ' + p.n +
                       (p.version !== data.labels[x] ? ', version ' + p.version : ''));
          }
        });
      });
      data.steps.forEach(function (step) {
        if (step.x === x) {
          lines.push('step ' + step.id + ' in ' + data.series[step.series].name + ': ' +
                     (step.relative > 0 ? '+' : '') + cutaway.number(step.relative) + ' %, ' +
                     (step.triage || 'not triaged'));
        }
      });
      data.machine.forEach(function (m) {
        if (m.x === x) { lines.push('machine changed: ' + m.keys); }
      });
      return cutaway.tip(lines);
    };
    option.grid.top = 56;
    option.xAxis = {type: 'category', data: data.labels, name: 'version',
                    nameLocation: 'middle', nameGap: 28,
                    axisLabel: {hideOverlap: true}};
    option.yAxis = {type: 'value', scale: true, name: cutaway.axisName(data.metric, data.unit),
                    nameTextStyle: {align: 'left'}};
    option.dataZoom = [{type: 'inside', xAxisIndex: 0}];
    if (count > 60) {
      option.dataZoom.push({type: 'slider', xAxisIndex: 0, height: 18, bottom: 4});
      option.grid.bottom = 64;
    }
    option.series = series;
    chart.setOption(option);
    return chart;
  };
}(window.cutaway));
