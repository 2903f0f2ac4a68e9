// Pictures of tensors: #include <qkv/viz.hpp> (also in <qkv/qkv.hpp>).
// Heatmaps and line plots for the terminal and as SVG files, and the
// autograd graph as Graphviz DOT. Reads tensors (core) and nothing above.
#pragma once
#include <qkv/viz/color.hpp>
#include <qkv/viz/graph.hpp>
#include <qkv/viz/heatmap.hpp>
#include <qkv/viz/model_summary.hpp>
#include <qkv/viz/model_trace.hpp>
#include <qkv/viz/plot.hpp>
#include <qkv/viz/xml.hpp>
