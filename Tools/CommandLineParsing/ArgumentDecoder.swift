/// The texts a command line gave one command: options by name, positional values by route.
struct ParsedValues {
    var options: [String: [String]] = [:]
    var positionals: [String: [String]] = [:]
}

/// Decodes a ``ParsableArguments`` type from parsed values: the `Decodable` conformance the
/// compiler writes for the type asks for each property, and the property's wrapper takes its
/// value from the ``PropertyDecoder`` it is given.
struct ArgumentDecoder: Decoder {
    let layout: CommandLayout
    let values: ParsedValues
    /// The route of the option group being decoded, with a trailing dot; empty for the command.
    let prefix: String

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(PropertyContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw Self.unsupported }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw Self.unsupported }

    static let unsupported = DecodingError.dataCorrupted(
        .init(codingPath: [], debugDescription: "a command's stored properties must be @Argument, @Option, @Flag or @OptionGroup"))

    /// The command-line texts given for the property at `route`, or nil.
    func texts(at route: String) -> [String]? {
        guard layout.isActive(route), let definition = layout.definition(at: route) else { return nil }
        return definition.isPositional ? values.positionals[route] : values.options[definition.optionKey]
    }
}

/// The decoder handed to one property wrapper.
struct PropertyDecoder: Decoder {
    let parent: ArgumentDecoder
    let route: String

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw ArgumentDecoder.unsupported }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw ArgumentDecoder.unsupported }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw ArgumentDecoder.unsupported }

    /// The value of the property the decoder stands for: from the command line, else its default.
    static func value<Value>(_: Value.Type, from decoder: any Decoder) throws -> Value {
        guard let decoder = decoder as? PropertyDecoder, let definition = decoder.parent.layout.definition(at: decoder.route) else {
            throw ArgumentDecoder.unsupported
        }
        let produced: Any?
        if let texts = decoder.parent.texts(at: decoder.route), !texts.isEmpty {
            produced = definition.makeValue(texts)
        } else if case .value(let initial) = definition.initial {
            produced = initial
        } else {
            produced = nil
        }
        guard let produced, let value = produced as? Value else {
            throw DecodingError.valueNotFound(
                Value.self, .init(codingPath: [], debugDescription: "no value for \(definition.displayName) (\(decoder.route))"))
        }
        return value
    }

    /// The decoder of an option group's own properties.
    static func nested(_ decoder: any Decoder) throws -> ArgumentDecoder {
        guard let decoder = decoder as? PropertyDecoder else { throw ArgumentDecoder.unsupported }
        return ArgumentDecoder(layout: decoder.parent.layout, values: decoder.parent.values, prefix: decoder.route + ".")
    }
}

/// Hands each property of the type being decoded a ``PropertyDecoder``.
struct PropertyContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ArgumentDecoder

    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try T(from: PropertyDecoder(parent: decoder, route: decoder.prefix + key.stringValue))
    }

    func decodeNil(forKey key: Key) throws -> Bool { false }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { throw ArgumentDecoder.unsupported }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { throw ArgumentDecoder.unsupported }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { throw ArgumentDecoder.unsupported }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw ArgumentDecoder.unsupported }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { throw ArgumentDecoder.unsupported }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { throw ArgumentDecoder.unsupported }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { throw ArgumentDecoder.unsupported }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { throw ArgumentDecoder.unsupported }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { throw ArgumentDecoder.unsupported }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { throw ArgumentDecoder.unsupported }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { throw ArgumentDecoder.unsupported }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { throw ArgumentDecoder.unsupported }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { throw ArgumentDecoder.unsupported }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { throw ArgumentDecoder.unsupported }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw ArgumentDecoder.unsupported
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw ArgumentDecoder.unsupported }
    func superDecoder() throws -> any Decoder { throw ArgumentDecoder.unsupported }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw ArgumentDecoder.unsupported }
}
