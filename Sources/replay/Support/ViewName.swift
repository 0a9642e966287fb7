import ArgumentParser
import EventStoreLMDB

/// A `rebuild --view` value: one of the store's views (``ViewTable/views``, the one list of view
/// tables), each rebuilt with every one of its tables (`books`: a book view's six).
struct ViewName: CheckedArgument {
    /// The view's name.
    let rawValue: String

    static func parse(_ text: String) throws -> ViewName {
        guard ViewTable.views.contains(text) else {
            throw ValidationError("not a view; the views are \(ViewTable.views.joined(separator: ", "))")
        }
        return ViewName(rawValue: text)
    }

    /// Every view, for `--help` and completion.
    static var allValueStrings: [String] { ViewTable.views }
}
