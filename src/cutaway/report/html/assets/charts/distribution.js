/* "distribution": each variant's runs as a strip (points spread across the variant's row) or,
 * with many runs, a violin outline; the median as a bar and the mean's interval as a band.
 * data: {metric, unit, log (a logarithmic value axis), variants: [{name, n, median, interval: [low, high],
 *        points?: [[value, row + offset]], violin?: {x: [], width: []}}]} */
(function (cutaway) {
  'use strict';
  cutaway.draw.distribution = function (element, data) {
    var names = data.variants.map(function (v) { return v.name; });
    element.style.height = (110 + 70 * names.length) + 'px';
    var chart = echarts.init(element, null, {renderer: 'canvas'});
    var series = data.variants.map(function (variant, row) {
      var color = cutaway.color(row);
      var marks = {
        markLine: {
          silent: true, symbol: 'none', label: {show: false},
          lineStyle: {color: '#222', width: 3, type: 'solid'},
          data: [[{coord: [variant.median, row - 0.42]}, {coord: [variant.median, row + 0.42]}]]
        },
        markArea: {
          silent: true, itemStyle: {color: color, opacity: 0.18},
          data: [[{coord: [variant.interval[0], row - 0.38]},
                  {coord: [variant.interval[1], row + 0.38]}]]
        }
      };
      if (variant.points) {
        return Object.assign({
          type: 'scatter', name: variant.name, data: variant.points, symbolSize: 6,
          large: variant.points.length > 2000, itemStyle: {color: color, opacity: 0.55}
        }, marks);
      }
      var outline = [];
      var x = variant.violin.x, width = variant.violin.width;
      for (var i = 0; i < x.length; i++) { outline.push([x[i], row + width[i]]); }
      for (var j = x.length - 1; j >= 0; j--) { outline.push([x[j], row - width[j]]); }
      if (outline.length) { outline.push(outline[0]); }
      return Object.assign({
        type: 'line', name: variant.name, data: outline, showSymbol: false,
        lineStyle: {color: color, width: 1.5}, itemStyle: {color: color},
        areaStyle: null
      }, marks);
    });
    var option = cutaway.base();
    option.legend.show = false;
    option.tooltip.trigger = 'item';
    option.tooltip.formatter = function (p) {
      var variant = data.variants[p.seriesIndex];
      var lines = [variant.name];
      if (variant.points) { lines.push('this run: ' + cutaway.withUnit(p.value[0], data.unit)); }
      lines.push('median: ' + cutaway.withUnit(variant.median, data.unit));
      lines.push('mean\u2019s interval: ' + cutaway.number(variant.interval[0]) + ' \u2013 ' +
                 cutaway.withUnit(variant.interval[1], data.unit));
      lines.push(variant.n + ' runs');
      return cutaway.tip(lines);
    };
    var rows = names.map(function (_, row) { return row; });
    option.grid.top = 12;
    option.xAxis = {type: data.log ? 'log' : 'value', scale: true,
                    name: cutaway.axisName(data.metric, data.unit) + (data.log ? ', log scale' : ''),
                    nameLocation: 'middle', nameGap: 28, axisLine: {onZero: false}};
    option.yAxis = {
      type: 'value', min: -0.5, max: names.length - 0.5, inverse: true,
      splitLine: {show: false}, axisLine: {onZero: false},
      axisTick: {customValues: rows},
      axisLabel: {customValues: rows, formatter: function (value) {
        return names[Math.round(value)] === undefined ? '' : names[Math.round(value)];
      }, width: 220, overflow: 'truncate'}
    };
    option.series = series;
    chart.setOption(option);
    return chart;
  };
}(window.cutaway));
