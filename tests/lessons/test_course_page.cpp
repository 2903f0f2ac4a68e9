// The course page (lessons/support/course_page.hpp): written for a fixture
// folder and by `lessons all`, parsed back as XML with pugixml. Every lesson
// of the catalogue is on it with its title and sections, every picture and
// source link points to a file that exists, transcripts come back exactly as
// written (folded when longer than 40 lines, after the lesson's opening and
// its "What to remember:" drawn from them), and a failed lesson shows as
// failed with its error.
#include <doctest/doctest.h>

#include <pugixml.hpp>

#include <algorithm>

#include "catalog.hpp"
#include "course_page.hpp"
#include "run_lesson.hpp"

namespace {

namespace fs = std::filesystem;
using qkv::lesson_test::read_text;
using qkv::lesson_test::TempDir;

void write_text(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary);
  out << text;
}

// All the text inside `node`, as a browser would show it.
std::string text_of(const pugi::xml_node& node) {
  std::string text;
  for (const pugi::xml_node& child : node.children())
    text += child.type() == pugi::node_pcdata ? std::string(child.value()) : text_of(child);
  return text;
}

struct Page {
  pugi::xml_document doc;
  pugi::xml_parse_result parsed;
  explicit Page(const fs::path& file) : parsed(doc.load_file(file.c_str())) {}
  pugi::xml_node html() const { return doc.child("html"); }
  // The element whose id is `id`.
  pugi::xml_node by_id(const std::string& id) const {
    return doc.select_node(fmt::format("//*[@id='{}']", id).c_str()).node();
  }
};

qkv::lesson::CatalogEntry lesson(int number) { return qkv::lesson::find_lesson(number).value(); }

// Every <img src> and <a href> that is not an anchor names a file under `out`.
void check_links(const Page& page, const fs::path& out) {
  int links = 0;
  for (const pugi::xpath_node& img : page.doc.select_nodes("//img")) {
    std::string src = img.node().attribute("src").value();
    INFO(src);
    CHECK(fs::is_regular_file(out / src));
    CHECK(std::string(img.node().attribute("alt").value()) != "");
    ++links;
  }
  // An SVG is an <object> (its <title>s show on hover) around its <img>, of the same file.
  for (const pugi::xpath_node& object : page.doc.select_nodes("//object")) {
    std::string data = object.node().attribute("data").value();
    INFO(data);
    CHECK(fs::is_regular_file(out / data));
    CHECK(std::string(object.node().child("img").attribute("src").value()) == data);
  }
  for (const pugi::xpath_node& a : page.doc.select_nodes("//a[@href]")) {
    std::string href = a.node().attribute("href").value();
    if (href.rfind('#', 0) == 0) {
      INFO(href);
      CHECK(page.by_id(href.substr(1)));  // an anchor on the page
      continue;
    }
    INFO(href);
    CHECK(fs::is_regular_file(out / href));
    ++links;
  }
  CHECK(links > 0);
}

}  // namespace

TEST_CASE("course page/a fixture folder: every lesson, its states, transcripts, pictures and sources") {
  TempDir dir("course_page");
  fs::path out = dir.path / "out", sources = dir.path / "sources";
  // Lesson 01 finished in this run, with two pictures (one SVG, one DOT), one
  // listed picture missing, and a transcript with markup in it.
  const auto& one = lesson(1);
  fs::path folder1 = out / std::string(one.program);
  const std::string transcript1 =
      "Lesson 01 · 注意力汇聚\nthe decoder stops at <eos> & \"quotes\" < > 'x'\n  tab\tend\n";
  write_text(folder1 / "transcript.txt", transcript1);
  write_text(folder1 / "weights.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"/>");
  write_text(folder1 / "graph.dot", "digraph { a -> b }");
  write_text(folder1 / "results.json", R"json({"lesson": 1, "pictures": [
      {"file": "weights.svg", "shows": "weights <q, k> & more"},
      {"file": "graph.dot", "shows": "the graph (Graphviz DOT)"},
      {"file": "gone.svg", "shows": "a picture that is not there"}]})json");
  write_text(sources / (std::string(one.program) + ".cpp"), "// lesson 01 <source> & more\nint main() {}\n");
  // Lesson 02 failed in this run (its folder holds an old transcript, not shown).
  const auto& two = lesson(2);
  write_text(out / std::string(two.program) / "transcript.txt", "stale transcript\n");
  write_text(sources / (std::string(two.program) + ".cpp"), "int main() { return 1; }\n");
  // Lesson 03 did not run now; an earlier run left its output.
  const auto& three = lesson(3);
  write_text(out / std::string(three.program) / "results.json", R"({"lesson": 3, "pictures": []})");
  // A whole transcript, as a lesson writes it: header, opening, a section of 50 lines, what to remember, summary.
  std::string transcript3 =
      "Lesson 03 from before\n=====\nSections of the notes: x\nOutput folder: y\nArithmetic: z\n"
      "This lesson learns <w> & shows\nhow it moved.\n\n== 1. a section ==\n";
  for (int i = 0; i < 50; ++i) transcript3 += fmt::format("line {}\n", i);
  transcript3 += "\nWhat to remember: a width <can> be\nlearned.\n\n== Summary ==\nw moved.\n";
  write_text(out / std::string(three.program) / "transcript.txt", transcript3);
  // Lesson 04: neither run nor any output. Lessons not written: planned.
  // Lesson 05 did not finish when it last ran: its folder is marked, beside an older run's results.
  const auto& five = lesson(5);
  write_text(out / std::string(five.program) / "unfinished.txt", "05_attention_rules failed:\nerror: <boom> & more\n");
  write_text(out / std::string(five.program) / "results.json", R"({"lesson": 5, "pictures": []})");
  // Lesson 06 ran in this run with status 0, yet its folder is marked unfinished: failed all the same.
  const auto& six = lesson(6);
  write_text(out / std::string(six.program) / "unfinished.txt", "06_attn_module ended without finishing\n");

  fs::path file = qkv::lesson::write_course_page(
      out, sources,
      {{1, true, ""},
       {2, false, "exit status 1\nerror: softmax: dim 3 out of range for <2, 3> & so on"},
       {6, true, ""}});
  CHECK(file == out / "index.html");
  Page page(file);
  INFO(page.parsed.description());
  REQUIRE(page.parsed);
  CHECK(std::string(page.html().attribute("xmlns").value()) == "http://www.w3.org/1999/xhtml");
  CHECK(page.doc.select_node("//head/meta[@charset='UTF-8']"));
  CHECK(page.doc.select_node("//head/style"));
  CHECK(!page.doc.select_node("//script"));
  CHECK(!page.doc.select_node("//link"));

  // The contents: every lesson of the catalogue, its title and its sections (Chinese intact).
  for (const auto& e : qkv::lesson::catalog) {
    INFO(e.program);
    pugi::xml_node row = page.by_id(fmt::format("contents-{:02d}", e.number));
    REQUIRE(row);
    std::string text = text_of(row);
    CHECK(text.find(std::string(e.title)) != std::string::npos);
    CHECK(text.find(std::string(e.sections)) != std::string::npos);
    if (!e.written) CHECK(text.find("planned") != std::string::npos);
  }
  CHECK(text_of(page.by_id("contents-01")).find("finished") != std::string::npos);
  CHECK(text_of(page.by_id("contents-02")).find("failed") != std::string::npos);
  CHECK(text_of(page.by_id("contents-03")).find("earlier run") != std::string::npos);
  CHECK(text_of(page.by_id("contents-04")).find("not run yet") != std::string::npos);
  CHECK(text_of(page.by_id("contents-05")).find("failed (an earlier run)") != std::string::npos);
  CHECK(text_of(page.by_id("contents-06")).find("failed") != std::string::npos);
  CHECK(text_of(page.by_id("contents-06")).find("earlier") == std::string::npos);

  // Sections for 01, 02, 03, 05, 06 only.
  CHECK(page.by_id("lesson-01"));
  CHECK(page.by_id("lesson-02"));
  CHECK(page.by_id("lesson-03"));
  CHECK(!page.by_id("lesson-04"));
  for (const char* id : {"lesson-05", "lesson-06"}) {
    CAPTURE(id);
    pugi::xml_node l = page.by_id(id);
    REQUIRE(l);
    CHECK(std::string(l.attribute("class").value()).find("failed") != std::string::npos);
    CHECK(l.select_node(".//pre[@class='error']"));
  }
  CHECK(text_of(page.by_id("lesson-05").select_node(".//pre[@class='error']").node()) ==
        "05_attention_rules failed:\nerror: <boom> & more\n");
  CHECK(text_of(page.by_id("lesson-05")).find("did not finish when it last ran") != std::string::npos);
  CHECK(!page.by_id("lesson-08"));

  // Lesson 01: the transcript comes back byte for byte (the escaping undone by the parser).
  pugi::xml_node l1 = page.by_id("lesson-01");
  CHECK(text_of(l1).find(std::string(one.sections)) != std::string::npos);
  pugi::xml_node pre = l1.select_node(".//pre[@class='transcript']").node();
  REQUIRE(pre);
  CHECK(text_of(pre) == transcript1);
  // Short: its fold stands open, named with its line count; no opening or closing to lift out of it.
  pugi::xml_node details = pre.parent();
  CHECK(std::string(details.name()) == "details");
  CHECK(std::string(details.attribute("open").value()) == "open");
  CHECK(text_of(details.child("summary")) == fmt::format("Transcript of lesson 01 · {} (3 lines)", one.title));
  CHECK(!l1.select_node(".//p[@class='opening']"));
  CHECK(!l1.select_node(".//p[@class='remember']"));
  // Its SVG as an image with its caption, the DOT file as a link, the missing picture left out.
  pugi::xpath_node_set images = l1.select_nodes(".//img");
  REQUIRE(images.size() == 1);
  CHECK(std::string(images[0].node().attribute("src").value()) == std::string(one.program) + "/weights.svg");
  CHECK(std::string(images[0].node().attribute("alt").value()) == "weights <q, k> & more");
  // The SVG is an <object> (so its <title>s show on hover) with the <img> inside it, in the figure.
  const pugi::xml_node object = images[0].node().parent();
  CHECK(std::string(object.name()) == "object");
  CHECK(std::string(object.attribute("data").value()) == std::string(one.program) + "/weights.svg");
  const pugi::xml_node figure = object.parent();
  CHECK(text_of(figure.child("figcaption")).find("weights <q, k> & more") != std::string::npos);
  CHECK(std::string(figure.child("figcaption").child("a").attribute("href").value()) ==
        std::string(one.program) + "/weights.svg");  // the picture at full size
  CHECK(l1.select_node(fmt::format(".//a[@href='{}/graph.dot']", one.program).c_str()));
  CHECK(text_of(l1).find("gone.svg") == std::string::npos);
  // Its source, copied beside its output and linked.
  pugi::xml_node source = l1.select_node(".//a[@class='source']").node();
  REQUIRE(source);
  CHECK(std::string(source.attribute("href").value()) ==
        std::string(one.program) + "/" + std::string(qkv::lesson::source_copy_name));
  CHECK(read_text(out / source.attribute("href").value()) == "// lesson 01 <source> & more\nint main() {}\n");

  // Lesson 02 is marked failed, with its error escaped and intact, and no stale transcript.
  pugi::xml_node l2 = page.by_id("lesson-02");
  CHECK(std::string(l2.attribute("class").value()).find("failed") != std::string::npos);
  pugi::xml_node error = l2.select_node(".//pre[@class='error']").node();
  REQUIRE(error);
  CHECK(text_of(error) == "exit status 1\nerror: softmax: dim 3 out of range for <2, 3> & so on");
  CHECK(text_of(l2).find("stale transcript") == std::string::npos);
  CHECK(l2.select_node(".//a[@class='source']"));

  // Lesson 03 shows what it left, marked as from an earlier run; its source is not in `sources`, so no link.
  pugi::xml_node l3 = page.by_id("lesson-03");
  CHECK(text_of(l3).find("Lesson 03 from before") != std::string::npos);
  CHECK(text_of(l3).find("earlier run") != std::string::npos);
  CHECK(!l3.select_node(".//a[@class='source']"));
  // Long (5 + 4 + 50 + 6 = 65 lines): folded, and its opening and what to remember shown above the fold, each one
  // paragraph.
  pugi::xml_node pre3 = l3.select_node(".//pre[@class='transcript']").node();
  REQUIRE(pre3);
  CHECK(text_of(pre3) == transcript3);
  CHECK(std::string(pre3.parent().name()) == "details");
  CHECK(!pre3.parent().attribute("open"));
  CHECK(text_of(pre3.parent().child("summary")) == fmt::format("Transcript of lesson 03 · {} (65 lines)", three.title));
  pugi::xml_node opening = l3.select_node(".//p[@class='opening']").node(),
                 remember = l3.select_node(".//p[@class='remember']").node();
  REQUIRE(opening);
  REQUIRE(remember);
  CHECK(text_of(opening) == "This lesson learns <w> & shows how it moved.");
  CHECK(text_of(remember) == "What to remember: a width <can> be learned.");

  check_links(page, out);
}

TEST_CASE("course page/lessons all writes it; a lesson that fails shows as failed") {
  // Lesson 01's output folder is taken by a file, so lesson 01 fails to create
  // it; every other lesson runs as usual.
  TempDir dir("course_page_all");
  fs::path out = dir.path / "out";
  const auto& one = lesson(1);
  write_text(out / std::string(one.program), "a file where the folder should be\n");
  qkv::lesson_test::Run r =
      qkv::lesson_test::run_program("lessons", fmt::format("all --out '{}'", out.string()), dir.path);
  INFO(r.output);
  CHECK(r.status == 1);  // one lesson failed
  CHECK(r.output.find("Course page: " + (out / "index.html").string()) != std::string::npos);

  Page page(out / "index.html");
  INFO(page.parsed.description());
  REQUIRE(page.parsed);
  for (const auto& e : qkv::lesson::catalog) {
    INFO(e.program);
    pugi::xml_node row = page.by_id(fmt::format("contents-{:02d}", e.number));
    REQUIRE(row);
    CHECK(text_of(row).find(std::string(e.title)) != std::string::npos);
    CHECK(text_of(row).find(std::string(e.sections)) != std::string::npos);
    pugi::xml_node section = page.by_id(fmt::format("lesson-{:02d}", e.number));
    CHECK(bool(section) == e.written);  // every written lesson ran (or failed) in this run
    if (!e.written || e.number == 1) continue;
    // A lesson that ran: its transcript as the lesson wrote it, its pictures, its source.
    CHECK(text_of(row).find("finished") != std::string::npos);
    pugi::xml_node pre = section.select_node(".//pre[@class='transcript']").node();
    REQUIRE(pre);
    const std::string transcript = read_text(out / std::string(e.program) / "transcript.txt");
    CHECK(text_of(pre) == transcript);
    // Folded if longer than 40 lines; every lesson's opening and what to remember above the fold.
    const auto lines = std::count(transcript.begin(), transcript.end(), '\n');
    CHECK(bool(pre.parent().attribute("open")) == (lines <= 40));
    CHECK(text_of(pre.parent().child("summary")).find(fmt::format("({} lines)", lines)) != std::string::npos);
    CHECK(text_of(section.select_node(".//p[@class='opening']").node()).size() > 40);
    CHECK(text_of(section.select_node(".//p[@class='remember']").node()).rfind("What to remember: ", 0) == 0);
    nlohmann::json results = nlohmann::json::parse(read_text(out / std::string(e.program) / "results.json"));
    size_t svgs = 0;
    for (const auto& p : results.at("pictures"))
      svgs += fs::path(p.at("file").get<std::string>()).extension() == ".svg";
    CHECK(section.select_nodes(".//img").size() == svgs);
    pugi::xml_node source = section.select_node(".//a[@class='source']").node();
    REQUIRE(source);
    // (the lessons' sources are in the repository's lessons/, beside tests/reference)
    fs::path original = fs::path(QKV_REFERENCE_DIR) / ".." / ".." / "lessons" / (std::string(e.program) + ".cpp");
    CHECK(read_text(out / source.attribute("href").value()) == read_text(original));
  }
  // Lesson 01 failed: marked so, with the runner's exit status and the lesson's own error message.
  CHECK(text_of(page.by_id("contents-01")).find("failed") != std::string::npos);
  pugi::xml_node error = page.by_id("lesson-01").select_node(".//pre[@class='error']").node();
  REQUIRE(error);
  CHECK(text_of(error).find("exit status 1") != std::string::npos);
  CHECK(text_of(error).find("error: ") != std::string::npos);
  CHECK(text_of(error).find(std::string(one.program)) != std::string::npos);  // the path it could not create
  check_links(page, out);
}
