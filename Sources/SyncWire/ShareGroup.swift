import ReadingEvents

/// The groups of event types a reader can choose to share with partners, and the group each
/// stored event belongs to (the `share_group` column of `events`).
///
/// `Sendable`: a plain enum.
public enum ShareGroup: String, Sendable, Hashable, CaseIterable, Codable {
    /// Books added, corrected, removed and their reading status: shared whenever any other group
    /// is, since a partner's device needs the book to show a finish, a rating or a day's pages.
    case books
    /// The reader's nickname and theme (never the image file itself).
    case profile
    /// Pages read, corrections, read-throughs and timed sessions: daily pages, calendar, streaks.
    case progress
    /// Goals and yearly challenges.
    case goals
    /// Finishing a book, and undoing a finish.
    case finishes
    /// Ratings and likes.
    case ratings
    /// Collected sentences.
    case sentences
    /// Memos: never shared unless the reader turns this group on.
    case memos
    /// Never shared: the home screen's order, and events of types this build does not know.
    case privateOnly = "private"

    /// The group of an event: one exhaustive switch over ``EventKind`` (no `default:`), so a new
    /// event type does not compile until it is placed; events this build does not know are private.
    public static func of(_ event: ReadingEvent) -> ShareGroup {
        guard let kind = event.kind else { return .privateOnly }
        switch kind {
        case .bookAdded, .metadataCorrected, .bookRemoved, .statusChanged: return .books
        case .profileUpdated: return .profile
        case .pagesRead, .progressCorrected, .readThroughStarted, .sessionStarted, .sessionPaused,
             .sessionResumed, .sessionFinished, .sessionDiscarded: return .progress
        case .goalSet, .goalChanged, .goalDeleted, .challengeSet: return .goals
        case .bookFinished, .finishUndone: return .finishes
        case .ratingSet, .ratingCleared, .bookLiked, .bookUnliked: return .ratings
        case .sentenceCollected, .sentenceEdited, .sentenceRemoved: return .sentences
        case .memoWritten, .memoEdited, .memoRemoved: return .memos
        case .homeOrderSet: return .privateOnly
        }
    }
}

/// What one reader shows its partners, by group (`GET`/`PUT /v1/share-settings`). `books` is
/// implied by any other group.
///
/// `Sendable`: a value type of booleans.
public struct ShareSettings: Sendable, Hashable, Codable {
    /// Nickname and theme.
    public var profile: Bool
    /// Pages read, sessions, streak-relevant events.
    public var progress: Bool
    /// Goals and challenges.
    public var goals: Bool
    /// Finished books.
    public var finishes: Bool
    /// Ratings and likes.
    public var ratings: Bool
    /// Collected sentences.
    public var sentences: Bool
    /// Memos; off unless the reader chooses.
    public var memos: Bool

    /// Creates settings; the defaults are what a new partnership shares (everything but goals and memos).
    public init(profile: Bool = true, progress: Bool = true, goals: Bool = false, finishes: Bool = true,
                ratings: Bool = true, sentences: Bool = true, memos: Bool = false) {
        self.profile = profile
        self.progress = progress
        self.goals = goals
        self.finishes = finishes
        self.ratings = ratings
        self.sentences = sentences
        self.memos = memos
    }

    /// The groups these settings share, as stored in `share_settings.groups` (sorted; `books`
    /// included when anything else is; never `private`).
    public var groups: [ShareGroup] {
        var result: [ShareGroup] = []
        if profile { result.append(.profile) }
        if progress { result.append(.progress) }
        if goals { result.append(.goals) }
        if finishes { result.append(.finishes) }
        if ratings { result.append(.ratings) }
        if sentences { result.append(.sentences) }
        if memos { result.append(.memos) }
        if !result.isEmpty { result.append(.books) }
        return result.sorted { $0.rawValue < $1.rawValue }
    }

    /// Settings from stored group names (unknown names ignored).
    public init(groups: [String]) {
        let set = Set(groups.compactMap(ShareGroup.init(rawValue:)))
        self.init(profile: set.contains(.profile), progress: set.contains(.progress), goals: set.contains(.goals),
                  finishes: set.contains(.finishes), ratings: set.contains(.ratings),
                  sentences: set.contains(.sentences), memos: set.contains(.memos))
    }
}
