// The seed flow through photoledger.h from C++17: the handle and the returned strings held by
// std::unique_ptr, a lambda as the completion, the listings as std::string.
// Usage: seed LIBRARY TEMP_PHOTO
#include <photoledger.h>

#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>

namespace {

struct StringFree {
    void operator()(char *string) const { photoledger_string_free(string); }
};
using String = std::unique_ptr<char, StringFree>;

struct LibraryClose {
    void operator()(photoledger_library *library) const { photoledger_close(library); }
};
using Library = std::unique_ptr<photoledger_library, LibraryClose>;

struct Saved {
    std::mutex lock;
    std::condition_variable done;
    bool finished = false;
    photoledger_status status = PHOTOLEDGER_OK;
    std::string identifier;
};

}  // namespace

int main(int argc, char **argv) {
    if (argc != 3) {
        std::cerr << "usage: seed LIBRARY TEMP_PHOTO\n";
        return 2;
    }
    photoledger_open_options options = PHOTOLEDGER_OPEN_OPTIONS_INIT;
    options.device = "cpp-host";
    options.preauthorized = 1;
    photoledger_library *opened = nullptr;
    char *message = nullptr;
    if (photoledger_open(argv[1], &options, &opened, &message) != PHOTOLEDGER_OK) {
        std::cerr << "open: " << String(message).get() << "\n";
        return 1;
    }
    Library library(opened);

    Saved saved;
    auto completion = [](photoledger_status status, const char *result, const char *text, void *user_data) {
        auto &saved = *static_cast<Saved *>(user_data);
        std::lock_guard<std::mutex> guard(saved.lock);
        saved.status = status;
        saved.identifier = status == PHOTOLEDGER_OK ? result : text;
        saved.finished = true;
        saved.done.notify_one();
    };
    photoledger_status status =
        photoledger_save_to_album_async(library.get(), argv[2], "Trip", PHOTOLEDGER_SAVE_MOVE_FILE, completion, &saved, &message);
    if (status != PHOTOLEDGER_OK) {
        std::cerr << "save: " << String(message).get() << "\n";
        return 1;
    }
    {
        std::unique_lock<std::mutex> guard(saved.lock);
        saved.done.wait(guard, [&] { return saved.finished; });
    }
    std::cout << "completion " << saved.status << " " << saved.identifier << "\n";

    char *json = nullptr;
    if (photoledger_fetch_assets_json(library.get(), nullptr, 0, &json, &message) != PHOTOLEDGER_OK) {
        std::cerr << "assets: " << String(message).get() << "\n";
        return 1;
    }
    std::cout << "assets " << String(json).get() << "\n";
    return 0;
}
