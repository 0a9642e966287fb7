import ReadingImport

/// Text from the store (titles, nicknames, sentences, type tags) made safe for a terminal: the rule
/// is ``ReadingImport/ReportText/printable(_:)`` (every control character, bidirectional override
/// or isolate and line separator shown as a visible escape, `\u{1B}`), the one place it is written.
/// Text mode only; JSON output stays exact.
func printable(_ text: String) -> String { ReportText.printable(text) }
