/* "rounds": each round's change of a variant against the baseline (paired in the round), in
 * round order, the equivalence margin as a band and each variant's estimate as a dashed line.
 * Changes beyond -50 % or +100 % in some round (`log`) are drawn as ratios on a logarithmic
 * axis, where a 10x slower round does not flatten every other one.
 * data: {metric, margin (%), log, reference?, series: [{name, rounds: [], changes: [%],
 *        estimate (%), interval: [%, %], verdict}]}; `reference` (cutaway compare: "the first
 *        experiment's median") names what the changes are against, when not the baseline. */
(function (cutaway) {
  'use strict';
  cutaway.draw.rounds = function (element, data) {
    element.style.height = '360px';
    var chart = echarts.init(element, null, {renderer: 'canvas'});
    /* What the value axis holds: the change in %, or the ratio on a log axis. */
    function y(change) { return data.log ? 1 + change / 100 : change; }
    function change(value) { return data.log ? (value - 1) * 100 : value; }
    var longest = Math.max.apply(null, data.series.map(function (s) { return s.rounds.length; }));
    var series = data.series.map(function (s, index) {
      var color = cutaway.color(index + 1);
      var points = s.rounds.map(function (round, i) { return [round, y(s.changes[i])]; });
      var item = {
        type: 'line', name: s.name, data: points, color: color,
        showSymbol: points.length <= 300, symbolSize: 5, lineStyle: {width: 1.2},
        sampling: points.length > 2000 ? 'lttb' : undefined,
        markLine: {
          silent: true, symbol: 'none', label: {show: false},
          lineStyle: {color: color, type: 'dashed', width: 1.5},
          data: s.estimate === null ? [] : [{yAxis: y(s.estimate)}]
        }
      };
      if (index === 0) {
        item.markArea = {
          silent: true, itemStyle: {color: '#888', opacity: 0.12},
          data: [[{yAxis: y(-data.margin)}, {yAxis: y(data.margin)}]]
        };
      }
      return item;
    });
    var option = cutaway.base();
    option.tooltip.trigger = 'axis';
    option.tooltip.formatter = function (params) {
      var lines = ['round ' + params[0].value[0]];
      params.forEach(function (p) {
        var percent = change(p.value[1]);
        lines.push(p.seriesName + ': ' + (percent > 0 ? '+' : '') + cutaway.number(percent) + ' %' +
                   ' (\u00d7' + cutaway.number(1 + percent / 100) + ')');
      });
      return cutaway.tip(lines);
    };
    option.xAxis = {type: 'value', name: 'round', nameLocation: 'middle', nameGap: 28,
                    min: 1, max: longest ? 'dataMax' : 1, minInterval: 1};
    option.grid.top = 56;
    /* `reference`: what the changes are against, when it is not each round's baseline run. */
    option.yAxis = data.log
      ? {type: 'log', logBase: 2, axisLabel: {formatter: function (v) { return '\u00d7' + cutaway.number(v); }},
         name: data.metric + ': ' + (data.reference ? 'value / ' + data.reference : 'variant / baseline') +
               ', log scale'}
      : {type: 'value', scale: true,
         name: 'change of ' + data.metric + (data.reference ? ' against ' + data.reference : '') + ' (%)'};
    option.yAxis.nameTextStyle = {align: 'left'};
    option.dataZoom = [{type: 'inside', xAxisIndex: 0}];
    if (longest > 100) {
      option.dataZoom.push({type: 'slider', xAxisIndex: 0, height: 18, bottom: 4});
      option.grid.bottom = 64;
    }
    option.series = series;
    chart.setOption(option);
    return chart;
  };
}(window.cutaway));
