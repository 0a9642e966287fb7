/// How text from an imported file appears in a warning, a skipped row or an error: the one rule,
/// used by every importer and by `replay` for everything it prints in text mode.
///
/// - Every control character (C0, DEL, C1), bidirectional mark, embedding, override or isolate,
///   and line or paragraph separator is shown as a visible escape (`\u{1B}`), so a crafted title
///   cannot move the cursor, set the window title, change colours or reorder what is shown.
/// - A value from the file is quoted with at most ``quotedLimit`` characters of it, then how many
///   more there were, so a bad 52 MB line is not echoed whole.
///
/// `Sendable`: a namespace without cases.
public enum ReportText {
    /// The most characters of a file's value a message quotes.
    public static let quotedLimit = 80

    /// `text` with every character that could act on a terminal escaped (see the type's rule).
    public static func printable(_ text: String) -> String {
        // The common case: nothing to escape, no copy.
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if needsEscape(scalar) {
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// A value from the file in double quotes: at most ``quotedLimit`` characters, escaped, then
    /// "… (N more characters)" when it was longer.
    public static func quoted(_ value: some StringProtocol) -> String {
        let head = value.prefix(quotedLimit)
        guard head.endIndex < value.endIndex else { return "\"\(printable(String(head)))\"" }
        return "\"\(printable(String(head)))…\" (\(value[head.endIndex...].count) more characters)"
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true                         // C0, DEL, C1 controls
        case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true  // bidi marks, embeddings, overrides, isolates
        case 0x2028, 0x2029: true                                     // line and paragraph separators
        default: false
        }
    }
}
