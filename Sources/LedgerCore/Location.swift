/// A place on Earth (WGS 84), as a camera's GPS records it and as an asset carries it.
public struct Location: Sendable, Hashable, CustomStringConvertible {
    /// Degrees north of the equator (negative: south), −90…90.
    public var latitude: Double
    /// Degrees east of Greenwich (negative: west), −180…180.
    public var longitude: Double
    /// Metres above sea level (negative: below), when recorded.
    public var altitude: Double?

    /// Creates a location.
    public init(latitude: Double, longitude: Double, altitude: Double? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
    }

    /// Whether the coordinates are finite and within their ranges (latitude −90…90, longitude
    /// −180…180, a finite altitude when there is one).
    public var isValid: Bool {
        latitude.isFinite && longitude.isFinite && abs(latitude) <= 90 && abs(longitude) <= 180 && (altitude?.isFinite ?? true)
    }

    /// `latitude,longitude[,altitude m]`.
    public var description: String {
        "\(latitude),\(longitude)" + (altitude.map { ",\($0) m" } ?? "")
    }
}
