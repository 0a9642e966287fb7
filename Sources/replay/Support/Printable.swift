/// Text from the store (titles, nicknames, sentences, type tags) made safe for a terminal: every
/// control character (C0, DEL, C1) and every bidirectional override or isolate is shown as a
/// visible escape (`\u{1B}`), so a crafted import cannot move the cursor, set the window title,
/// change colours or reorder what is shown. Text mode only; JSON output stays exact.
func printable(_ text: String) -> String {
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

private func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F: true                         // C0, DEL, C1 controls
    case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true  // bidi marks, embeddings, overrides, isolates
    case 0x2028, 0x2029: true                                     // line and paragraph separators
    default: false
    }
}
