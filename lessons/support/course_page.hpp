// The course page: one static file, <out>/index.html, that shows a learner
// everything the lessons wrote into <out>/ — for each lesson of the catalogue
// its number, title and the notes' sections, and for each lesson with output
// its transcript, its pictures (the SVG files its results.json lists) and a
// copy of its source — readable in a browser from the folder alone (no
// scripts, fonts, stylesheets or network).
//
// The page is XHTML: well-formed XML in the XHTML namespace, UTF-8, every tag
// closed and all text escaped, so that an XML parser reads it back.
//
// What a lesson shows depends on the run that writes the page and on what
// its folder holds:
//   ran in this run and finished   its transcript, pictures and source
//   ran in this run and failed     "failed", the error, and its source (a
//                                  folder still marked unfinished.txt is
//                                  failed too, whatever the exit status)
//   not in this run, marked        "failed (an earlier run)", what its
//     unfinished.txt               unfinished.txt says, and its source
//   not in this run, has output    its transcript, pictures and source as an
//                                  earlier run left them (so a page written
//                                  after `lessons 3` still shows the others)
//   not in this run, no output     listed in the contents as not run yet
//   not written yet                listed in the contents as planned
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::lesson {

// How one lesson fared in the run that writes the page.
struct LessonOutcome {
  int number;         // the lesson's number in the catalogue
  bool ok;            // finished with exit status 0
  std::string error;  // when it failed: its exit status and what it printed on stderr
};

// The name of the source copy inside a lesson's folder: a plain-text name, so
// a browser shows it instead of offering to download a C++ file.
inline constexpr std::string_view source_copy_name = "source.cpp.txt";

// The mark of a lesson's folder whose run has not finished (lesson.hpp): it
// says when the run started, or the error that ended it. While it is there,
// the folder holds no results of that run.
inline constexpr std::string_view unfinished_name = "unfinished.txt";

// Writes <out>/index.html for the lessons of the catalogue, `run` being the
// lessons of this run, and copies each shown lesson's source
// <sources>/<program>.cpp to <out>/<program>/source.cpp.txt. Returns the
// page's path; a page it cannot write is a qkv::Error.
std::filesystem::path write_course_page(const std::filesystem::path& out, const std::filesystem::path& sources,
                                        const std::vector<LessonOutcome>& run);

}  // namespace qkv::lesson
