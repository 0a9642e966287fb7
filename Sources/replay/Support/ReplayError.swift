import Foundation

/// A failure with one clear line for stderr (exit status 1); text from the store or a file in it is
/// shown with control characters escaped (see ``printable(_:)``).
struct ReplayError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = printable(description) }
}

/// Writes a line to stderr.
func warn(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }
