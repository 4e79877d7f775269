"""The paper-scale paths on CPU: log-mel features, the Speech Commands folder reader on generated clips,
a one-epoch run of the audio protocol, and the error that names missing local data before any work."""
import numpy as np
import pytest
from iclr26_instance_noise import bench, data
from scipy.io import wavfile

RATE = 16000


def test_log_mel_puts_a_pure_tone_in_the_band_around_its_frequency():
    fb = data.mel_filterbank(40, 512, RATE)
    freqs = np.linspace(0, RATE / 2, 257)
    peaks = freqs[fb.argmax(axis=1)]
    assert fb.shape == (40, 257) and np.all(np.diff(peaks) >= 0) and peaks[-1] > peaks[0] and fb.max() <= 1.0
    tone = np.sin(2 * np.pi * 1000.0 * np.arange(RATE) / RATE)
    spec = data.log_mel(tone, RATE)
    assert spec.shape == (40, 101)
    band = int(spec.mean(axis=1).argmax())
    assert abs(peaks[band] - 1000.0) <= np.max(np.diff(peaks[max(band - 1, 0):band + 2]))


def _write_clips(folder, words=("no", "yes"), per_word=8):
    rng = np.random.default_rng(0)
    names = []
    for w, word in enumerate(words):
        (folder / word).mkdir(parents=True)
        for i in range(per_word):
            n = RATE if i % 2 else RATE // 2  # half-second clips are zero-padded to 1 s
            f0 = 300.0 if w == 0 else 1200.0
            clip = 0.5 * np.sin(2 * np.pi * f0 * np.arange(n) / RATE) + 0.05 * rng.normal(size=n)
            wavfile.write(folder / word / f"c{i}.wav", RATE, (clip * 32767).astype(np.int16))
            names.append(f"{word}/c{i}.wav")
    return names


def test_speech_commands_reads_two_word_folders_and_the_testing_list(tmp_path):
    names = _write_clips(tmp_path / "speech_commands")
    (tmp_path / "speech_commands" / "testing_list.txt").write_text("\n".join([names[0], names[9]]))
    X, y, is_test = data.speech_commands(tmp_path)
    assert X.shape == (16, 1, 40, 101) and X.dtype == np.float32
    assert y.tolist() == [0] * 8 + [1] * 8 and np.flatnonzero(is_test).tolist() == [0, 9]
    with pytest.raises(FileNotFoundError, match=r"speech_commands: expected .wav files in the subfolders"):
        data.speech_commands(tmp_path, words=("no", "maybe"))


def test_audio_protocol_runs_every_arm_for_one_epoch(tmp_path):
    pytest.importorskip("torch")
    from iclr26_instance_noise import paper_nn

    _write_clips(tmp_path / "speech_commands", per_word=12)
    arrays = paper_nn.speech_no_yes(tmp_path, seed=0)
    assert len(arrays[1]) + len(arrays[3]) == 24 and len(arrays[3]) > 0
    rows, metrics = paper_nn.run_protocol("speech", arrays, lambda: paper_nn.SpeechCNN(width=4), None, "cpu", 0,
                                          epochs=1, settings=(("region", 0.2),))
    assert [r["method"] for r in rows] == [f"speech/{arm}" for arm in
                                           ("noisy", "constant", "forward-rho_hat", "backward-rho_hat",
                                            "forward-oracle")]
    assert all(0 <= r["accuracy"] <= 1 and np.isfinite(r["log_loss"]) for r in rows)
    assert "speech_region_0.2_rho_hat_mae" in metrics


def test_paper_scale_names_every_missing_local_data_set_before_any_work(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setenv("ICLR26_DATA", str(tmp_path))
    monkeypatch.setattr(bench, "_gbm_dataset", lambda *a: pytest.fail("CPU work started before the data check"))
    with pytest.raises(FileNotFoundError, match=r"paper scale needs local data") as err:
        bench.run_gbm("paper", "cpu", 0, tmp_path)
    assert "cifar10" in str(err.value) and "speech_commands" in str(err.value)
