// Package doccheck keeps the repository's comments honest about the
// documents they cite. It has no code: its test walks every .go file in the
// repository and fails, naming file:line, when a comment cites a Markdown
// file that is not there, or a section of it that is not there.
//
// The rule, so that a maintainer with a clone can follow every citation:
//
//   - A citation is any path ending in ".md" in a comment, such as
//     docs/architecture.md or ../../README.md. Web addresses (http://,
//     https://) are not citations and are skipped.
//   - The path resolves against the repository root (docs/architecture.md)
//     or against the directory of the citing file (../../README.md from
//     here); either must exist inside the repository.
//   - Section numbers written right after the path (docs/wire-formats.md
//     §5.3, §5) must be numbered headings of that file ("## 5. …",
//     "### 5.3 …"), and a quoted heading right after it
//     (docs/architecture.md, "The translation matrix and the hub") must be
//     one of its headings, ignoring case.
//
// A fact that is in no document of the repository is said inline instead.
package doccheck
