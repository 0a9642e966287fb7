/// A book as host apps receive it from a bookstore API (the Aladin item lookup of the seed apps),
/// or as a reader types it in by hand.
///
/// `Sendable`: a value type of strings, dates and integers.
public struct BookMetadata: Hashable, Sendable, Codable {
    /// The title ("채식주의자"); required, at most 500 characters.
    public var title: String
    /// The subtitle, if any.
    public var subtitle: String?
    /// The author line as the store gives it, roles included ("한강 (지은이), Deborah Smith (옮긴이)").
    public var authors: String
    /// The publisher.
    public var publisher: String?
    /// The publication date.
    public var publicationDate: LocalDate?
    /// The ISBN-13, checked by its check digit.
    public var isbn13: ISBN13?
    /// The number of pages; `nil` when unknown (pages can then be recorded without an upper bound).
    public var pageCount: Int?
    /// The category path, levels separated by ">" ("국내도서>소설/시/희곡>한국소설>2000년대 이후 한국소설").
    public var categoryPath: String?
    /// The cover image URL.
    public var coverURL: String?
    /// The product page URL.
    public var productLink: String?
    /// The thickness in millimetres, when the store reports it (for the shelf's stack height).
    public var thicknessMillimetres: Double?

    /// The longest title accepted.
    public static let maxTitleLength = 500
    /// The largest page count accepted.
    public static let maxPageCount = 100_000

    /// Creates metadata; call ``validated()`` to check it.
    public init(title: String, subtitle: String? = nil, authors: String = "", publisher: String? = nil,
                publicationDate: LocalDate? = nil, isbn13: ISBN13? = nil, pageCount: Int? = nil,
                categoryPath: String? = nil, coverURL: String? = nil, productLink: String? = nil,
                thicknessMillimetres: Double? = nil) {
        self.title = title; self.subtitle = subtitle; self.authors = authors; self.publisher = publisher
        self.publicationDate = publicationDate; self.isbn13 = isbn13; self.pageCount = pageCount
        self.categoryPath = categoryPath; self.coverURL = coverURL; self.productLink = productLink
        self.thicknessMillimetres = thicknessMillimetres
    }

    /// The category levels ("국내도서", "소설/시/희곡", ...), empty when there is no path.
    public var categories: [String] {
        (categoryPath ?? "").split(separator: ">").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
    }

    /// The category the home list groups by: the second level of the path when there is one
    /// (the first is the store section, e.g. "국내도서"), else the first, else "".
    public var groupingCategory: String {
        let levels = categories
        return levels.count >= 2 ? levels[1] : (levels.first ?? "")
    }

    /// Checks the rules: a title that shows something (not only whitespace or invisible characters), of at most ``maxTitleLength`` characters
    /// (and 4 UTF-8 bytes per character, ``Limits/utf8Bytes(forCharacters:)``); the other texts
    /// within their ``Limits``, in characters and bytes; a page count in 1 ... ``maxPageCount``; a thickness in (0, 1000] mm.
    /// Throws ``ValidationError`` naming the field.
    public func validated() throws(ValidationError) -> BookMetadata {
        try ValueRules.utf8Length(title, field: "metadata.title", limit: Self.maxTitleLength)
        try ValueRules.visible(title, field: "metadata.title")
        guard title.count <= Self.maxTitleLength else {
            throw ValidationError(field: "metadata.title", rule: .tooLong,
                                  detail: "the title has \(title.count) characters, at most \(Self.maxTitleLength) are allowed")
        }
        try ValueRules.length(subtitle, field: "metadata.subtitle", limit: Limits.subtitleLength)
        try ValueRules.length(authors, field: "metadata.authors", limit: Limits.authorsLength)
        try ValueRules.length(publisher, field: "metadata.publisher", limit: Limits.publisherLength)
        try ValueRules.length(categoryPath, field: "metadata.categoryPath", limit: Limits.categoryPathLength)
        try ValueRules.length(coverURL, field: "metadata.coverURL", limit: Limits.urlLength)
        try ValueRules.length(productLink, field: "metadata.productLink", limit: Limits.urlLength)
        if let pages = pageCount, !(1...Self.maxPageCount).contains(pages) {
            throw ValidationError(field: "metadata.pageCount", rule: .outOfRange,
                                  detail: "\(pages) pages is outside 1 ... \(Self.maxPageCount)")
        }
        if let mm = thicknessMillimetres, !(mm > 0 && mm <= 1000) {
            throw ValidationError(field: "metadata.thicknessMillimetres", rule: .outOfRange,
                                  detail: "\(mm) mm is outside (0, 1000]")
        }
        return self
    }
}

extension StringProtocol {
    /// The text without leading and trailing whitespace and newlines.
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        var start = scalars.startIndex, end = scalars.endIndex
        while start < end, scalars[start].properties.isWhitespace { start = scalars.index(after: start) }
        while end > start, scalars[scalars.index(before: end)].properties.isWhitespace { end = scalars.index(before: end) }
        return String(String.UnicodeScalarView(scalars[start..<end]))
    }
}
