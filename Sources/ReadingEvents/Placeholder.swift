/// Placeholder until the event catalog lands.
enum ReadingEventsPlaceholder {}
