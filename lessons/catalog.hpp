// The course: every lesson's number, program, title and the sections of the
// five study notes (documents 000–004) it walks through, with the notes' own
// headings. Written here once: the `lessons` runner lists and runs from it,
// and each lesson prints its own row as its header line.
//
// A lesson not yet written is listed with written = false, so the list shows
// the whole course; the runner refuses to run it.
#pragma once
#include <array>
#include <optional>
#include <string_view>

namespace qkv::lesson {

struct CatalogEntry {
  int number;                 // 1 … 14
  std::string_view program;   // "01_average_pooling": lessons/<program>.cpp, built as <program>
  std::string_view title;     // "attention cues and average pooling"
  std::string_view sections;  // "001 注意力提示, 注意力汇聚 §1 平均汇聚; …"
  bool written;               // false: planned, not yet in lessons/
};

inline constexpr std::array<CatalogEntry, 14> catalog = {{
    {1, "01_average_pooling", "attention cues and average pooling",
     "001 注意力提示, 注意力汇聚 (1、平均汇聚); 003 注意力机制产生的原因; 000 1.注意力", true},
    {2, "02_nadaraya_watson", "Nadaraya–Watson kernel regression", "001 注意力汇聚 (2、非参数注意力汇聚)", true},
    {3, "03_parametric_pooling", "parametric attention pooling", "001 注意力汇聚 (3、带参数注意力汇聚)", true},
    {4, "04_scoring_functions", "similarity and scoring functions",
     "001 快速了解 (本质思想, 计算过程), 打分函数 (屏蔽 softmax, 加性注意力, 缩放点积注意力, 注意力的输出); "
     "003 相关数学表达, 注意力评分函数; 004 2.1 引言 (权重计算)",
     true},
    {5, "05_attention_rules", "the three attention rules and BMM", "000 2.注意力计算规则", true},
    {6, "06_attn_module", "the Attn module",
     "000 3.注意力机制 (3.1.注意力机制, 3.2.注意力机制的作用, 3.3.注意力机制的实现步骤), 4.注意力机制的代码分析", true},
    {7, "07_self_attention", "single-head self-attention", "002 Attention核心思想", true},
    {8, "08_seq2seq_attention", "seq2seq with Bahdanau attention", "003 带有注意力机制的seq2seq模型", true},
    {9, "09_multi_head_attention", "multi-head attention", "004 2.1 引言 (多头注意力机制)", true},
    {10, "10_positional_encoding", "self-attention and positional encoding",
     "001 自注意力 (简介, 对比, 位置编码, 位置编码矩阵, 绝对/相对位置信息); 004 2.2 (位置编码)", true},
    {11, "11_transformer", "the Transformer", "004 2.2 Transformer与Scaled Dot-Product Attention; 001 位置编码", true},
    {12, "12_attention_classifier", "an attention text classifier", "004 1.简介, 3.1 概览, 3.2 模型实现", true},
    {13, "13_your_own_layer", "writing your own layer", "none: qkv's own, how a reader extends the framework", true},
    {14, "14_attention_at_length", "attention at length",
     "none: qkv's own, attention without its T × T weights, after lesson 10's 001 自注意力 对比", true},
}};

// The row of lesson `number`, or nothing if the course has no such lesson.
inline std::optional<CatalogEntry> find_lesson(int number) {
  for (const CatalogEntry& e : catalog)
    if (e.number == number) return e;
  return std::nullopt;
}

}  // namespace qkv::lesson
